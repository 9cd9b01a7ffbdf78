import Crdkafka
import Foundation
import Logging

/// The low and high watermarks of a partition: the first offset still stored and
/// the offset the next record will get (the end of the log).
public struct KafkaWatermarks: Sendable, Hashable {
    public var low: Int64
    public var high: Int64

    public init(low: Int64, high: Int64) {
        self.low = low
        self.high = high
    }
}

/// Reads offsets for monitoring: partitions' end offsets, a group's committed offsets,
/// the offset of a point in time, and the timestamp of one record. It never joins a
/// group and never commits, so it can watch a group its services belong to.
///
/// Every call is a blocking librdkafka request; they run on Dispatch threads, never on
/// the cooperative pool. One handle is kept for the reader's life, so its connections
/// are reused from one reading to the next.
public final class KafkaOffsetReader: Sendable {
    let client: RDKafkaClient
    let bootstrapServers: String
    /// The group whose committed offsets ``committedOffsets(topic:partitions:timeout:)`` reads, if any.
    public let group: String?

    /// - Parameter group: the consumer group to read committed offsets of; `nil` when only
    ///   end offsets and record timestamps are wanted.
    public init(bootstrapServers: String, group: String? = nil, properties: [String: String] = [:], logger: Logger) throws {
        var settings: [String: String] = [
            "bootstrap.servers": bootstrapServers, "client.id": "checkin-offset-reader", "log.queue": "true",
            "enable.auto.commit": "false", "enable.auto.offset.store": "false",
            // Reading one record's timestamp should not prefetch a backlog.
            "queued.min.messages": "1",
            // An offset at the end of the log answers at once instead of after the timeout.
            "enable.partition.eof": "true",
        ]
        if let group { settings["group.id"] = group }
        settings.merge(properties) { _, explicit in explicit }
        let client = try RDKafkaClient.make(
            type: RD_KAFKA_CONSUMER, properties: settings, callbackContext: LogContext(logger: logger, quietLogs: true),
            logger: logger, configure: Callbacks.installLogging)
        rd_kafka_set_log_queue(client.handle, nil)
        self.client = client
        self.bootstrapServers = bootstrapServers
        self.group = group
    }

    /// The partition ids of `topic`; throws when the broker does not answer or knows no such topic.
    public func partitions(of topic: String, timeout: Duration = .seconds(5)) async throws(KafkaError) -> [Int32] {
        let client = self.client
        let servers = bootstrapServers
        return try await Blocking.run { () throws(KafkaError) -> [Int32] in
            guard let handle = rd_kafka_topic_new(client.handle, topic, nil) else {
                throw KafkaError(message: "invalid topic name \(topic)")
            }
            defer { rd_kafka_topic_destroy(handle) }
            var metadata: UnsafePointer<rd_kafka_metadata>?
            let error = rd_kafka_metadata(client.handle, 0, handle, &metadata, Int32(clamping: timeout.milliseconds))
            rd_kafka_poll(client.handle, 0)
            defer { if let metadata { rd_kafka_metadata_destroy(metadata) } }
            guard error == RD_KAFKA_RESP_ERR_NO_ERROR, let metadata, metadata.pointee.topic_cnt > 0 else {
                throw KafkaError("could not read the partitions of \(topic) from \(servers)", code: error)
            }
            let found = metadata.pointee.topics[0]
            guard found.err == RD_KAFKA_RESP_ERR_NO_ERROR else {
                throw KafkaError("could not read the partitions of \(topic) from \(servers)", code: found.err)
            }
            return (0..<Int(found.partition_cnt)).map { found.partitions[$0].id }.sorted()
        }
    }

    /// Each partition's watermarks, asked of the partition's leader.
    public func watermarks(
        topic: String, partitions: [Int32], timeout: Duration = .seconds(5)
    ) async throws(KafkaError) -> [Int32: KafkaWatermarks] {
        let client = self.client
        return try await Blocking.run { () throws(KafkaError) -> [Int32: KafkaWatermarks] in
            var result: [Int32: KafkaWatermarks] = [:]
            for partition in partitions {
                var low: Int64 = 0
                var high: Int64 = 0
                let error = rd_kafka_query_watermark_offsets(
                    client.handle, topic, partition, &low, &high, Int32(clamping: timeout.milliseconds))
                guard error == RD_KAFKA_RESP_ERR_NO_ERROR else {
                    throw KafkaError("could not read the end offset of \(topic)[\(partition)]", code: error)
                }
                result[partition] = KafkaWatermarks(low: low, high: high)
            }
            return result
        }
    }

    /// The group's committed offsets (the next offset to read) of the partitions that have one.
    public func committedOffsets(
        topic: String, partitions: [Int32], timeout: Duration = .seconds(5)
    ) async throws(KafkaError) -> [Int32: Int64] {
        guard group != nil else { throw KafkaError(message: "committed offsets need a group: the reader was made without one") }
        let client = self.client
        return try await Blocking.run { () throws(KafkaError) -> [Int32: Int64] in
            let list = TopicPartitionList.make(
                Dictionary(uniqueKeysWithValues: partitions.map { (KafkaTopicPartition(topic: topic, partition: $0), Int64(0)) }))
            defer { rd_kafka_topic_partition_list_destroy(list) }
            let error = rd_kafka_committed(client.handle, list, Int32(clamping: timeout.milliseconds))
            guard error == RD_KAFKA_RESP_ERR_NO_ERROR else {
                throw KafkaError("could not read the committed offsets of \(topic)", code: error)
            }
            var result: [Int32: Int64] = [:]
            for element in TopicPartitionList.elements(list) where element.error == RD_KAFKA_RESP_ERR_NO_ERROR {
                if element.offset >= 0 { result[element.partition.partition] = element.offset }
            }
            return result
        }
    }

    /// Per partition, the offset of the first record stamped at or after `time`
    /// (the end offset when there is none).
    public func offsets(
        topic: String, partitions: [Int32], at time: Date, timeout: Duration = .seconds(5)
    ) async throws(KafkaError) -> [Int32: Int64] {
        let client = self.client
        let milliseconds = Int64(time.timeIntervalSince1970 * 1000)
        return try await Blocking.run { () throws(KafkaError) -> [Int32: Int64] in
            let list = TopicPartitionList.make(
                Dictionary(
                    uniqueKeysWithValues: partitions.map { (KafkaTopicPartition(topic: topic, partition: $0), milliseconds) }))
            defer { rd_kafka_topic_partition_list_destroy(list) }
            let error = rd_kafka_offsets_for_times(client.handle, list, Int32(clamping: timeout.milliseconds))
            guard error == RD_KAFKA_RESP_ERR_NO_ERROR else {
                throw KafkaError("could not look up the offsets of \(topic) at \(time)", code: error)
            }
            var result: [Int32: Int64] = [:]
            for element in TopicPartitionList.elements(list) {
                guard element.error == RD_KAFKA_RESP_ERR_NO_ERROR else {
                    throw KafkaError("could not look up the offset of \(element.partition) at \(time)", code: element.error)
                }
                result[element.partition.partition] = element.offset
            }
            return result
        }
    }

    /// The records of a partition from `offset` up to `end` (exclusive), in order: fewer when
    /// the log ends first or `timeout` passes. For tools and tests that read what a topic
    /// holds without joining a group (nothing to wait for, nothing left behind in the broker).
    public func records(
        topic: String, partition: Int32, from offset: Int64, to end: Int64, timeout: Duration = .seconds(10)
    ) async throws(KafkaError) -> [KafkaConsumerMessage] {
        guard end > offset else { return [] }
        let client = self.client
        return try await Blocking.run { () throws(KafkaError) -> [KafkaConsumerMessage] in
            guard let handle = rd_kafka_topic_new(client.handle, topic, nil) else {
                throw KafkaError(message: "invalid topic name \(topic)")
            }
            defer { rd_kafka_topic_destroy(handle) }
            guard rd_kafka_consume_start(handle, partition, offset) == 0 else {
                throw KafkaError("could not read \(topic)[\(partition)] at \(offset)", code: rd_kafka_last_error())
            }
            defer { rd_kafka_consume_stop(handle, partition) }
            var records: [KafkaConsumerMessage] = []
            let deadline = ContinuousClock.now + timeout
            while ContinuousClock.now < deadline {
                guard let message = rd_kafka_consume(handle, partition, 200) else {
                    rd_kafka_poll(client.handle, 0)
                    continue
                }
                defer { rd_kafka_message_destroy(message) }
                let error = message.pointee.err
                if error == RD_KAFKA_RESP_ERR__PARTITION_EOF { break }
                guard error == RD_KAFKA_RESP_ERR_NO_ERROR else {
                    throw KafkaError("could not read \(topic)[\(partition)] at \(offset)", code: error)
                }
                let record = ConsumerPoller.convert(message)
                if record.offset >= end { break }
                records.append(record)
                if record.offset + 1 >= end { break }
            }
            return records
        }
    }

    /// The timestamp (create or log-append time) of the record at `offset`, or nil when
    /// there is no record there (yet) or it carries no timestamp.
    public func timestamp(
        topic: String, partition: Int32, offset: Int64, timeout: Duration = .seconds(5)
    ) async throws(KafkaError) -> Date? {
        try await records(topic: topic, partition: partition, from: offset, to: offset + 1, timeout: timeout).first?.timestamp
    }
}

/// How far a consumer group is behind, per partition.
public struct KafkaPartitionLag: Sendable, Hashable {
    public var partition: KafkaTopicPartition
    /// The next offset the group will read; `nil` when it has committed nothing.
    public var committed: Int64?
    public var watermarks: KafkaWatermarks

    public init(partition: KafkaTopicPartition, committed: Int64?, watermarks: KafkaWatermarks) {
        self.partition = partition
        self.committed = committed
        self.watermarks = watermarks
    }

    /// Records in the log not yet processed: the end offset minus the committed offset.
    /// A group that committed nothing starts at the earliest record still stored.
    public var records: Int64 {
        let start = max(committed ?? watermarks.low, watermarks.low)
        return max(watermarks.high - start, 0)
    }

    /// The offset of the oldest unprocessed record, when there is one.
    public var firstUnprocessedOffset: Int64? {
        records > 0 ? max(committed ?? watermarks.low, watermarks.low) : nil
    }
}

extension KafkaOffsetReader {
    /// Lag of every partition of `topic` against the given committed offsets.
    public func lag(topic: String, committed: (_ partitions: [Int32]) async throws -> [Int32: Int64]) async throws
        -> [KafkaPartitionLag]
    {
        let partitions = try await partitions(of: topic)
        let ends = try await watermarks(topic: topic, partitions: partitions)
        let done = try await committed(partitions)
        return partitions.map { partition in
            KafkaPartitionLag(
                partition: KafkaTopicPartition(topic: topic, partition: partition), committed: done[partition],
                watermarks: ends[partition] ?? KafkaWatermarks(low: 0, high: 0))
        }
    }
}
