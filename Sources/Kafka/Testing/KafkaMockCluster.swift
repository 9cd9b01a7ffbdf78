import Crdkafka
import Logging

/// An in-process Kafka cluster (librdkafka's mock brokers) with fault
/// injection, so code using this module can be tested without a broker.
/// Not for production use.
public final class KafkaMockCluster: Sendable {
    /// Errors the mock can answer a request with.
    public enum InjectedError: Sendable {
        /// Permanent: the record fails.
        case topicAuthorizationFailed
        /// Retriable: the producer retries and succeeds later.
        case notLeaderForPartition
        /// The broker drops the connection.
        case disconnect

        var code: rd_kafka_resp_err_t {
            switch self {
            case .topicAuthorizationFailed: RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED
            case .notLeaderForPartition: RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION
            case .disconnect: RD_KAFKA_RESP_ERR__TRANSPORT
            }
        }
    }

    /// `bootstrap.servers` of the mock brokers.
    public let bootstrapServers: String
    /// The handle the cluster lives in; destroyed after the cluster.
    private let client: RDKafkaClient
    private let cluster: MockClusterPointer

    public init(brokers: Int = 1, logger: Logger = Logger(label: "kafka-mock-cluster")) throws {
        let client = try RDKafkaClient.make(
            type: RD_KAFKA_PRODUCER, properties: ["log.queue": "true"],
            callbackContext: LogContext(logger: logger, quietLogs: true), logger: logger,
            configure: Callbacks.installLogging)
        rd_kafka_set_log_queue(client.handle, nil)
        guard let cluster = rd_kafka_mock_cluster_new(client.handle, Int32(brokers)) else {
            throw KafkaError(message: "could not create a mock cluster")
        }
        self.client = client
        self.cluster = MockClusterPointer(pointer: cluster)
        self.bootstrapServers = String(cString: rd_kafka_mock_cluster_bootstraps(cluster))
        // Groups form at once instead of after the broker's usual 3 s delay.
        rd_kafka_mock_group_initial_rebalance_delay_ms(cluster, 0)
    }

    deinit {
        rd_kafka_mock_cluster_destroy(cluster.pointer)
    }

    public func createTopic(_ name: String, partitions: Int32) throws {
        let error = rd_kafka_mock_topic_create(cluster.pointer, name, partitions, 1)
        guard error == RD_KAFKA_RESP_ERR_NO_ERROR else {
            throw KafkaError("could not create mock topic \(name)", code: error)
        }
    }

    /// The next `count` produce requests fail with `error`.
    public func failProduceRequests(_ error: InjectedError, count: Int = 1) {
        let errors = [rd_kafka_resp_err_t](repeating: error.code, count: count)
        rd_kafka_mock_push_request_errors_array(cluster.pointer, 0, count, errors)
    }

    /// Takes a broker (ids start at 1) down or brings it back. Bringing it back binds its old
    /// port again, and librdkafka aborts the process if another socket took that port meanwhile:
    /// a test that only needs the broker gone leaves it down.
    public func setBroker(_ id: Int32, up: Bool) {
        if up {
            _ = rd_kafka_mock_broker_set_up(cluster.pointer, id)
        } else {
            _ = rd_kafka_mock_broker_set_down(cluster.pointer, id)
        }
    }
}

/// The mock cluster's pointer; librdkafka's mock API is thread-safe.
struct MockClusterPointer: @unchecked Sendable {
    let pointer: OpaquePointer
}
