import Crdkafka
import Logging

/// librdkafka's in-process mock brokers. The cluster lives in a handle of its own, which
/// is destroyed after the cluster.
final class RDKafkaMockCluster: @unchecked Sendable {
    /// `@unchecked`: librdkafka's mock API is thread-safe; the pointer never changes.
    private let cluster: OpaquePointer
    private let client: RDKafkaClient
    /// `bootstrap.servers` of the mock brokers.
    let bootstrapServers: String

    init(brokers: Int, logger: Logger) throws(KafkaError) {
        let client = try RDKafkaClient.makeLogging(.producer, properties: ["log.queue": "true"], quietLogs: true, logger: logger)
        guard let cluster = rd_kafka_mock_cluster_new(client.handle, Int32(brokers)) else {
            throw KafkaError(message: "could not create a mock cluster")
        }
        self.client = client
        self.cluster = cluster
        self.bootstrapServers = String(cString: rd_kafka_mock_cluster_bootstraps(cluster))
        // Groups form at once instead of after the broker's usual 3 s delay.
        rd_kafka_mock_group_initial_rebalance_delay_ms(cluster, 0)
    }

    deinit {
        rd_kafka_mock_cluster_destroy(cluster)
    }

    func createTopic(_ name: String, partitions: Int32) throws(KafkaError) {
        let error = rd_kafka_mock_topic_create(cluster, name, partitions, 1)
        guard error == RD_KAFKA_RESP_ERR_NO_ERROR else {
            throw KafkaError("could not create mock topic \(name)", code: error)
        }
    }

    /// The next `count` produce requests fail with `code`.
    func failProduceRequests(with code: KafkaError.Code, count: Int) {
        let errors = [rd_kafka_resp_err_t](repeating: code.rdkafka, count: count)
        rd_kafka_mock_push_request_errors_array(cluster, 0, count, errors)
    }

    /// Takes a broker (ids start at 1) down or brings it back.
    func setBroker(_ id: Int32, up: Bool) {
        if up {
            _ = rd_kafka_mock_broker_set_up(cluster, id)
        } else {
            _ = rd_kafka_mock_broker_set_down(cluster, id)
        }
    }
}
