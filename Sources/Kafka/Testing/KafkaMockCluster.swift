import Logging

/// An in-process Kafka cluster (librdkafka's mock brokers) with fault
/// injection, so code using this module can be tested without a broker.
/// Not for production use.
package final class KafkaMockCluster: Sendable {
    /// Errors the mock can answer a request with.
    package enum InjectedError: Sendable {
        /// Permanent: the record fails.
        case topicAuthorizationFailed
        /// Retriable: the producer retries and succeeds later.
        case notLeaderForPartition
        /// The broker drops the connection.
        case disconnect

        var code: KafkaError.Code {
            switch self {
            case .topicAuthorizationFailed: .topicAuthorizationFailed
            case .notLeaderForPartition: .notLeaderForPartition
            case .disconnect: .transport
            }
        }
    }

    /// `bootstrap.servers` of the mock brokers.
    package var bootstrapServers: String { cluster.bootstrapServers }
    private let cluster: RDKafkaMockCluster

    package init(brokers: Int = 1, logger: Logger = Logger(label: "kafka-mock-cluster")) throws {
        self.cluster = try RDKafkaMockCluster(brokers: brokers, logger: logger)
    }

    package func createTopic(_ name: String, partitions: Int32) throws {
        try cluster.createTopic(name, partitions: partitions)
    }

    /// The next `count` produce requests fail with `error`.
    package func failProduceRequests(_ error: InjectedError, count: Int = 1) {
        cluster.failProduceRequests(with: error.code, count: count)
    }

    /// Takes a broker (ids start at 1) down or brings it back. Bringing it back binds its old
    /// port again, and librdkafka aborts the process if another socket took that port meanwhile:
    /// a test that only needs the broker gone leaves it down.
    package func setBroker(_ id: Int32, up: Bool) {
        cluster.setBroker(id, up: up)
    }
}
