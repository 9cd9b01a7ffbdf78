import Crdkafka

/// Metadata requests and topic administration. Every call here blocks; callers run them on
/// `Blocking`'s threads.
extension RDKafkaClient {
    /// Asks the broker for its metadata, then serves the logs due; throws when it has not
    /// answered within the timeout.
    func requestMetadata(timeout: Duration) throws(KafkaError) {
        var metadata: UnsafePointer<rd_kafka_metadata>?
        let error = rd_kafka_metadata(handle, 0, nil, &metadata, Int32(clamping: timeout.milliseconds))
        serveCallbacks()
        if let metadata { rd_kafka_metadata_destroy(metadata) }
        guard error == RD_KAFKA_RESP_ERR_NO_ERROR else {
            throw KafkaError("the broker at \(bootstrapServers) did not answer a metadata request", code: error)
        }
    }

    /// The partition ids of `topic`, in order; throws when the broker does not answer or knows no such topic.
    func partitionIds(of topic: String, timeout: Duration) throws(KafkaError) -> [Int32] {
        guard let topicHandle = rd_kafka_topic_new(handle, topic, nil) else {
            throw KafkaError(message: "invalid topic name \(topic)")
        }
        defer { rd_kafka_topic_destroy(topicHandle) }
        var metadata: UnsafePointer<rd_kafka_metadata>?
        let error = rd_kafka_metadata(handle, 0, topicHandle, &metadata, Int32(clamping: timeout.milliseconds))
        serveCallbacks()
        defer { if let metadata { rd_kafka_metadata_destroy(metadata) } }
        guard error == RD_KAFKA_RESP_ERR_NO_ERROR, let metadata, metadata.pointee.topic_cnt > 0 else {
            throw KafkaError("could not read the partitions of \(topic) from \(bootstrapServers)", code: error)
        }
        let found = metadata.pointee.topics[0]
        guard found.err == RD_KAFKA_RESP_ERR_NO_ERROR else {
            throw KafkaError("could not read the partitions of \(topic) from \(bootstrapServers)", code: found.err)
        }
        return (0..<Int(found.partition_cnt)).map { found.partitions[$0].id }.sorted()
    }

    /// Creates the topics that do not exist yet; one that exists already is left as it is.
    func createTopics(_ topics: [KafkaAdmin.TopicSpecification], timeout: Duration) throws(KafkaError) {
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
        let options = rd_kafka_AdminOptions_new(handle, RD_KAFKA_ADMIN_OP_CREATETOPICS)
        defer { rd_kafka_AdminOptions_destroy(options) }
        _ = rd_kafka_AdminOptions_set_request_timeout(
            options, Int32(clamping: timeout.milliseconds), &errorText, errorText.count)
        _ = rd_kafka_AdminOptions_set_operation_timeout(
            options, Int32(clamping: timeout.milliseconds), &errorText, errorText.count)
        let queue = rd_kafka_queue_new(handle)
        defer { rd_kafka_queue_destroy(queue) }
        rd_kafka_CreateTopics(handle, &newTopics, newTopics.count, options, queue)

        let deadline = ContinuousClock.now + timeout + .seconds(1)
        var event: OpaquePointer?
        while event == nil && ContinuousClock.now < deadline {
            event = rd_kafka_queue_poll(queue, 100)
            serveCallbacks()
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
