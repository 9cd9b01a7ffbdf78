import Crdkafka
import Logging
import struct Foundation.Date

/// A change of a consumer's assignment, as the group's rebalance callback reports it.
enum RDKafkaRebalance {
    /// The group completed a rebalance: this member's (possibly empty) share, or under the
    /// cooperative protocol the partitions added to it.
    case assign([KafkaTopicPartition])
    /// Partitions taken away (eager: the whole assignment, as a rebalance begins).
    case revoke([KafkaTopicPartition])
    /// The rebalance failed; the partitions it concerned.
    case failed(KafkaError.Code, [KafkaTopicPartition])
}

/// Serves a consumer handle's rebalances; called on the thread that polls the handle
/// (or closes it), which must assign or unassign before it returns.
protocol RDKafkaRebalanceHandler: RDKafkaCallbackContext {
    func rebalance(_ change: RDKafkaRebalance, client: RDKafkaClient)
}

/// A consumer handle's `opaque`: the handler and the client it serves.
private final class ConsumerCallbacks: RDKafkaCallbackContext, @unchecked Sendable {
    /// `@unchecked`: `client` is set once, before the handle is first polled.
    let handler: any RDKafkaRebalanceHandler
    /// Weak: the client retains this object for as long as its handle lives. Nil only while
    /// the client is destroyed, after its consumer was closed: no rebalance is left to serve then.
    weak var client: RDKafkaClient?

    init(handler: any RDKafkaRebalanceHandler) {
        self.handler = handler
    }

    var logger: Logger { handler.logger }
    var quietLogs: Bool { handler.quietLogs }

    static func install(_ conf: OpaquePointer) {
        Callbacks.installLogging(conf)
        rd_kafka_conf_set_rebalance_cb(conf) { handle, error, partitions, opaque in
            guard handle != nil, let callbacks = Callbacks.context(opaque) as? ConsumerCallbacks,
                let client = callbacks.client
            else { return }
            let changed = TopicPartitionList.partitions(partitions)
            let change: RDKafkaRebalance =
                switch error {
                case RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS: .assign(changed)
                case RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS: .revoke(changed)
                default: .failed(KafkaError.Code(error), changed)
                }
            callbacks.handler.rebalance(change, client: client)
        }
    }
}

extension RDKafkaClient {
    /// The offset that assigns a partition at the group's committed offset (or `auto.offset.reset`).
    static let committedOffset = Int64(RD_KAFKA_OFFSET_INVALID)

    /// A consumer whose messages, rebalances and logs all come through `poll`, so that one
    /// thread serves them all.
    static func makeConsumer(
        properties: [String: String], handler: any RDKafkaRebalanceHandler, logger: Logger
    ) throws(KafkaError) -> RDKafkaClient {
        let callbacks = ConsumerCallbacks(handler: handler)
        let client = try make(
            .consumer, properties: properties, callbackContext: callbacks, logger: logger, configure: ConsumerCallbacks.install)
        callbacks.client = client
        rd_kafka_poll_set_consumer(client.handle)
        client.routeLogsToMainQueue()
        return client
    }

    func subscribe(_ topics: [String]) throws(KafkaError) {
        let error = TopicPartitionList(topics: topics).withPointer { rd_kafka_subscribe(handle, $0) }
        guard error == RD_KAFKA_RESP_ERR_NO_ERROR else { throw KafkaError("could not subscribe to \(topics)", code: error) }
    }

    func unsubscribe() throws(KafkaError) {
        let error = rd_kafka_unsubscribe(handle)
        guard error == RD_KAFKA_RESP_ERR_NO_ERROR else { throw KafkaError("could not leave the group", code: error) }
    }

    /// Leaves the group; the final revocation runs the rebalance handler on this thread.
    func closeConsumer() throws(KafkaError) {
        let error = rd_kafka_consumer_close(handle)
        guard error == RD_KAFKA_RESP_ERR_NO_ERROR else { throw KafkaError("closing the consumer", code: error) }
    }

    /// Waits up to the timeout for a record (serving rebalances and logs meanwhile); nil when none came.
    func poll(timeoutMilliseconds: Int32) -> RDKafkaPolled? {
        guard let message = rd_kafka_consumer_poll(handle, timeoutMilliseconds) else { return nil }
        defer { rd_kafka_message_destroy(message) }
        return RDKafkaMessage.polled(message)
    }

    /// The rebalance protocol the group uses now is the cooperative one. False while the
    /// group is being left, when librdkafka reports none: the eager calls are the safe choice then.
    var rebalancesCooperatively: Bool {
        rd_kafka_rebalance_protocol(handle).map { String(cString: $0) == "COOPERATIVE" } ?? false
    }

    /// The partitions being revoked were lost to the group (the session timed out) rather than handed on.
    var assignmentLost: Bool { rd_kafka_assignment_lost(handle) != 0 }

    /// Eager protocol: the whole assignment, each partition at its offset.
    func assign(_ offsets: [KafkaTopicPartition: Int64]) throws(KafkaError) {
        let error = TopicPartitionList(offsets).withPointer { rd_kafka_assign(handle, $0) }
        guard error == RD_KAFKA_RESP_ERR_NO_ERROR else { throw KafkaError("rebalance", code: error) }
    }

    /// Eager protocol: gives up the whole assignment.
    func unassignAll() throws(KafkaError) {
        let error = rd_kafka_assign(handle, nil)
        guard error == RD_KAFKA_RESP_ERR_NO_ERROR else { throw KafkaError("rebalance", code: error) }
    }

    /// Cooperative protocol: adds partitions to the assignment, each at its offset.
    func incrementalAssign(_ offsets: [KafkaTopicPartition: Int64]) throws(KafkaError) {
        guard let error = TopicPartitionList(offsets).withPointer({ rd_kafka_incremental_assign(handle, $0) }) else { return }
        throw KafkaError("rebalance", consuming: error)
    }

    /// Cooperative protocol: takes partitions out of the assignment.
    func incrementalUnassign(_ partitions: [KafkaTopicPartition]) throws(KafkaError) {
        guard let error = TopicPartitionList(partitions).withPointer({ rd_kafka_incremental_unassign(handle, $0) }) else {
            return
        }
        throw KafkaError("rebalance", consuming: error)
    }

    /// Pauses fetching of the whole assignment. librdkafka drops what it fetched ahead for
    /// a paused partition, and keeps the pause across a rebalance.
    func pauseAssignment() {
        changeAssignment(rd_kafka_pause_partitions)
    }

    /// Resumes fetching of the whole assignment, from the position after the last message
    /// handed out.
    func resumeAssignment() {
        changeAssignment(rd_kafka_resume_partitions)
    }

    func resume(_ partitions: [KafkaTopicPartition]) throws(KafkaError) {
        let error = TopicPartitionList(partitions).withPointer { rd_kafka_resume_partitions(handle, $0) }
        guard error == RD_KAFKA_RESP_ERR_NO_ERROR else { throw KafkaError("could not resume \(partitions)", code: error) }
    }

    private func changeAssignment(
        _ change: (OpaquePointer?, UnsafeMutablePointer<rd_kafka_topic_partition_list_t>?) -> rd_kafka_resp_err_t
    ) {
        var assignment: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>?
        guard rd_kafka_assignment(handle, &assignment) == RD_KAFKA_RESP_ERR_NO_ERROR, let assignment else { return }
        let list = TopicPartitionList(adopting: assignment)
        if !list.isEmpty { _ = list.withPointer { change(handle, $0) } }
    }

    /// Sends a commit of `offsets` (each the next offset to read) to the group; waits for
    /// the broker's answer only when asked.
    func commit(_ offsets: [KafkaTopicPartition: Int64], waiting: Bool) throws(KafkaError) {
        let error = TopicPartitionList(offsets).withPointer { rd_kafka_commit(handle, $0, waiting ? 0 : 1) }
        guard error == RD_KAFKA_RESP_ERR_NO_ERROR else {
            throw KafkaError("could not commit offsets \(offsets)", code: error)
        }
    }

    /// The group's committed offsets (the next offset to read) of the partitions of `topic` that
    /// have one. Blocking.
    func committedOffsets(topic: String, partitions: [Int32], timeout: Duration) throws(KafkaError) -> [Int32: Int64] {
        let list = TopicPartitionList(
            Dictionary(uniqueKeysWithValues: partitions.map { (KafkaTopicPartition(topic: topic, partition: $0), Int64(0)) }))
        let error = list.withPointer { rd_kafka_committed(handle, $0, Int32(clamping: timeout.milliseconds)) }
        guard error == RD_KAFKA_RESP_ERR_NO_ERROR else {
            throw KafkaError("could not read the committed offsets of \(topic)", code: error)
        }
        var result: [Int32: Int64] = [:]
        for element in list.elements where element.error == nil {
            if element.offset >= 0 { result[element.partition.partition] = element.offset }
        }
        return result
    }

    /// Per partition of `topic`, the offset of the first record stamped at or after `time`
    /// (the end offset when there is none). Blocking.
    func offsets(topic: String, partitions: [Int32], at time: Date, timeout: Duration) throws(KafkaError) -> [Int32: Int64] {
        let milliseconds = Int64(time.timeIntervalSince1970 * 1000)
        let list = TopicPartitionList(
            Dictionary(
                uniqueKeysWithValues: partitions.map { (KafkaTopicPartition(topic: topic, partition: $0), milliseconds) }))
        let error = list.withPointer { rd_kafka_offsets_for_times(handle, $0, Int32(clamping: timeout.milliseconds)) }
        guard error == RD_KAFKA_RESP_ERR_NO_ERROR else {
            throw KafkaError("could not look up the offsets of \(topic) at \(time)", code: error)
        }
        var result: [Int32: Int64] = [:]
        for element in list.elements {
            if let error = element.error {
                throw KafkaError("could not look up the offset of \(element.partition) at \(time)", code: error)
            }
            result[element.partition.partition] = element.offset
        }
        return result
    }

    /// The partition's watermarks as last reported in fetch responses (no request is made);
    /// nil when librdkafka has none.
    func cachedWatermarks(of partition: KafkaTopicPartition) -> (low: Int64, high: Int64)? {
        var low: Int64 = -1
        var high: Int64 = -1
        let error = rd_kafka_get_watermark_offsets(handle, partition.topic, partition.partition, &low, &high)
        guard error == RD_KAFKA_RESP_ERR_NO_ERROR else { return nil }
        return (low, high)
    }

    /// The partition's watermarks, asked of its leader. Blocking.
    func queryWatermarks(of partition: KafkaTopicPartition, timeout: Duration) throws(KafkaError) -> (low: Int64, high: Int64) {
        var low: Int64 = -1
        var high: Int64 = -1
        let error = rd_kafka_query_watermark_offsets(
            handle, partition.topic, partition.partition, &low, &high, Int32(clamping: timeout.milliseconds))
        guard error == RD_KAFKA_RESP_ERR_NO_ERROR else {
            throw KafkaError("could not read the end offset of \(partition)", code: error)
        }
        return (low, high)
    }
}
