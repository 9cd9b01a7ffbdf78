import Logging

/// What a service does before it starts: wait for the broker, make sure its topics exist.
package enum KafkaAdmin {
    /// Creates the topics that do not exist yet (existing ones are left as they are).
    /// - Parameters:
    ///   - replicationFactor: copies of each partition; -1: the broker's default.
    ///   - topicConfiguration: topic-level settings, such as `min.insync.replicas`.
    ///   - properties: the connection's librdkafka properties (TLS, SASL), as the other clients have them.
    package static func createTopics(
        _ topics: [(name: String, partitions: Int32)], replicationFactor: Int32 = -1,
        topicConfiguration: [String: String] = [:], bootstrapServers: String, properties: [String: String] = [:],
        timeout: Duration, logger: Logger
    ) async throws {
        guard !topics.isEmpty else { return }
        let client = try adminClient(bootstrapServers: bootstrapServers, properties: properties, quietLogs: false, logger: logger)
        let specifications = topics.map {
            TopicSpecification(
                name: $0.name, partitions: $0.partitions, replicationFactor: replicationFactor, configuration: topicConfiguration)
        }
        try await Blocking.run { () throws(KafkaError) in
            try client.createTopics(specifications, timeout: timeout)
        }
    }

    struct TopicSpecification {
        var name: String
        var partitions: Int32
        var replicationFactor: Int32
        var configuration: [String: String]
    }

    /// Returns once the broker answers a metadata request; throws a ``KafkaError``
    /// naming the address when it has not within `timeout`.
    package static func waitUntilReachable(
        bootstrapServers: String, properties: [String: String] = [:], timeout: Duration, logger: Logger
    ) async throws {
        // Refused connections are expected while the broker starts; they are logged at debug level.
        let client = try adminClient(bootstrapServers: bootstrapServers, properties: properties, quietLogs: true, logger: logger)
        try await Blocking.run { () throws(KafkaError) in
            let deadline = ContinuousClock.now + timeout
            var lastError = KafkaError.Code.transport
            repeat {
                let remaining = max(deadline - ContinuousClock.now, .milliseconds(1))
                do throws(KafkaError) {
                    try client.requestMetadata(timeout: min(remaining, .seconds(1)))
                    return
                } catch {
                    lastError = error.code ?? .transport
                }
            } while ContinuousClock.now < deadline
            throw KafkaError(
                "the Kafka broker at \(bootstrapServers) could not be reached within \(timeout)", code: lastError)
        }
    }

    /// A client for metadata and topic administration, connecting as the others do (`properties`:
    /// TLS, SASL and any other connection setting).
    static func adminClient(
        bootstrapServers: String, properties: [String: String] = [:], quietLogs: Bool, logger: Logger
    ) throws(KafkaError) -> RDKafkaClient {
        var settings = properties
        settings.merge(["bootstrap.servers": bootstrapServers, "log.queue": "true", "client.id": "kafka-admin"]) { _, own in own }
        return try RDKafkaClient.makeLogging(.producer, properties: settings, quietLogs: quietLogs, logger: logger)
    }
}
