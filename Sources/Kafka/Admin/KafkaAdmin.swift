import Crdkafka
import Logging

/// What a service does before it starts: wait for the broker, make sure its topics exist.
public enum KafkaAdmin {
    /// Creates the topics that do not exist yet (existing ones are left as they are).
    /// - Parameters:
    ///   - replicationFactor: copies of each partition; -1: the broker's default.
    ///   - topicConfiguration: topic-level settings, such as `min.insync.replicas`.
    ///   - properties: the connection's librdkafka properties (TLS, SASL), as the other clients have them.
    public static func createTopics(
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
            try createTopics(specifications, client: client, bootstrapServers: bootstrapServers, timeout: timeout)
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
    public static func waitUntilReachable(
        bootstrapServers: String, properties: [String: String] = [:], timeout: Duration, logger: Logger
    ) async throws {
        // Refused connections are expected while the broker starts; they are logged at debug level.
        let client = try adminClient(bootstrapServers: bootstrapServers, properties: properties, quietLogs: true, logger: logger)
        try await Blocking.run { () throws(KafkaError) in
            let deadline = ContinuousClock.now + timeout
            var lastError = RD_KAFKA_RESP_ERR__TRANSPORT
            repeat {
                let remaining = max(deadline - ContinuousClock.now, .milliseconds(1))
                var metadata: UnsafePointer<rd_kafka_metadata>?
                lastError = rd_kafka_metadata(
                    client.handle, 0, nil, &metadata, Int32(clamping: min(remaining, .seconds(1)).milliseconds))
                rd_kafka_poll(client.handle, 0)
                if let metadata { rd_kafka_metadata_destroy(metadata) }
                if lastError == RD_KAFKA_RESP_ERR_NO_ERROR { return }
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
        let client = try RDKafkaClient.make(
            type: RD_KAFKA_PRODUCER,
            properties: settings,
            callbackContext: LogContext(logger: logger, quietLogs: quietLogs), logger: logger,
            configure: Callbacks.installLogging)
        rd_kafka_set_log_queue(client.handle, nil)
        return client
    }

    private static func createTopics(
        _ topics: [TopicSpecification], client: RDKafkaClient, bootstrapServers: String, timeout: Duration
    ) throws(KafkaError) {
        var errorText = [CChar](repeating: 0, count: 512)
        var newTopics: [OpaquePointer?] = []
        defer { for topic in newTopics { rd_kafka_NewTopic_destroy(topic) } }
        for topic in topics {
            guard
                let newTopic = rd_kafka_NewTopic_new(
                    topic.name, topic.partitions, topic.replicationFactor, &errorText, errorText.count)
            else {
                throw KafkaError(message: "invalid topic \(topic.name)", reason: RDKafkaClient.string(errorText))
            }
            newTopics.append(newTopic)
            for (name, value) in topic.configuration.sorted(by: { $0.key < $1.key }) {
                let code = rd_kafka_NewTopic_set_config(newTopic, name, value)
                guard code == RD_KAFKA_RESP_ERR_NO_ERROR else {
                    throw KafkaError("invalid setting \(name)=\(value) of topic \(topic.name)", code: code)
                }
            }
        }
        let options = rd_kafka_AdminOptions_new(client.handle, RD_KAFKA_ADMIN_OP_CREATETOPICS)
        defer { rd_kafka_AdminOptions_destroy(options) }
        _ = rd_kafka_AdminOptions_set_request_timeout(
            options, Int32(clamping: timeout.milliseconds), &errorText, errorText.count)
        _ = rd_kafka_AdminOptions_set_operation_timeout(
            options, Int32(clamping: timeout.milliseconds), &errorText, errorText.count)
        let queue = rd_kafka_queue_new(client.handle)
        defer { rd_kafka_queue_destroy(queue) }
        rd_kafka_CreateTopics(client.handle, &newTopics, newTopics.count, options, queue)

        let deadline = ContinuousClock.now + timeout + .seconds(1)
        var event: OpaquePointer?
        while event == nil && ContinuousClock.now < deadline {
            event = rd_kafka_queue_poll(queue, 100)
            rd_kafka_poll(client.handle, 0)
        }
        guard let event else {
            throw KafkaError(message: "creating topics at \(bootstrapServers) timed out after \(timeout)")
        }
        defer { rd_kafka_event_destroy(event) }
        let code = rd_kafka_event_error(event)
        guard code == RD_KAFKA_RESP_ERR_NO_ERROR else {
            throw KafkaError(
                "could not create topics at \(bootstrapServers)", code: code,
                reason: String(cString: rd_kafka_event_error_string(event)))
        }
        guard let result = rd_kafka_event_CreateTopics_result(event) else { return }
        var count = 0
        guard let results = rd_kafka_CreateTopics_result_topics(result, &count) else { return }
        for index in 0..<count {
            let topicResult = results[index]
            let topicError = rd_kafka_topic_result_error(topicResult)
            if topicError == RD_KAFKA_RESP_ERR_NO_ERROR || topicError == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS { continue }
            let name = String(cString: rd_kafka_topic_result_name(topicResult))
            throw KafkaError(
                "could not create topic \(name)", code: topicError,
                reason: rd_kafka_topic_result_error_string(topicResult).map { String(cString: $0) })
        }
    }
}
