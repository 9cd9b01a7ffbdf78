import Foundation
import Logging

/// The low and high watermarks of a partition: the first offset still stored and
/// the offset the next record will get (the end of the log).
package struct KafkaWatermarks: Sendable, Hashable {
    package var low: Int64
    package var high: Int64

    package init(low: Int64, high: Int64) {
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
package final class KafkaOffsetReader: Sendable {
    let client: RDKafkaClient
    /// The group whose committed offsets ``committedOffsets(topic:partitions:timeout:)`` reads, if any.
    package let group: String?

    /// - Parameter group: the consumer group to read committed offsets of; `nil` when only
    ///   end offsets and record timestamps are wanted.
    package init(bootstrapServers: String, group: String? = nil, properties: [String: String] = [:], logger: Logger) throws {
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
        self.client = try RDKafkaClient.makeLogging(.consumer, properties: settings, quietLogs: true, logger: logger)
        self.group = group
    }

    /// The partition ids of `topic`; throws when the broker does not answer or knows no such topic.
    package func partitions(of topic: String, timeout: Duration = .seconds(5)) async throws(KafkaError) -> [Int32] {
        let client = self.client
        return try await Blocking.run { () throws(KafkaError) -> [Int32] in
            try client.partitionIds(of: topic, timeout: timeout)
        }
    }

    /// Each partition's watermarks, asked of the partition's leader.
    package func watermarks(
        topic: String, partitions: [Int32], timeout: Duration = .seconds(5)
    ) async throws(KafkaError) -> [Int32: KafkaWatermarks] {
        let client = self.client
        return try await Blocking.run { () throws(KafkaError) -> [Int32: KafkaWatermarks] in
            var result: [Int32: KafkaWatermarks] = [:]
            for partition in partitions {
                let marks = try client.queryWatermarks(of: KafkaTopicPartition(topic: topic, partition: partition), timeout: timeout)
                result[partition] = KafkaWatermarks(low: marks.low, high: marks.high)
            }
            return result
        }
    }

    /// The group's committed offsets (the next offset to read) of the partitions that have one.
    package func committedOffsets(
        topic: String, partitions: [Int32], timeout: Duration = .seconds(5)
    ) async throws(KafkaError) -> [Int32: Int64] {
        guard group != nil else { throw KafkaError(message: "committed offsets need a group: the reader was made without one") }
        let client = self.client
        return try await Blocking.run { () throws(KafkaError) -> [Int32: Int64] in
            try client.committedOffsets(topic: topic, partitions: partitions, timeout: timeout)
        }
    }

    /// Per partition, the offset of the first record stamped at or after `time`
    /// (the end offset when there is none).
    package func offsets(
        topic: String, partitions: [Int32], at time: Date, timeout: Duration = .seconds(5)
    ) async throws(KafkaError) -> [Int32: Int64] {
        let client = self.client
        return try await Blocking.run { () throws(KafkaError) -> [Int32: Int64] in
            try client.offsets(topic: topic, partitions: partitions, at: time, timeout: timeout)
        }
    }

    /// The records of a partition from `offset` up to `end` (exclusive), in order: fewer when
    /// the log ends first or `timeout` passes. For tools and tests that read what a topic
    /// holds without joining a group (nothing to wait for, nothing left behind in the broker).
    package func records(
        topic: String, partition: Int32, from offset: Int64, to end: Int64, timeout: Duration = .seconds(10)
    ) async throws(KafkaError) -> [KafkaConsumerMessage] {
        guard end > offset else { return [] }
        let client = self.client
        return try await Blocking.run { () throws(KafkaError) -> [KafkaConsumerMessage] in
            let reader = try RDKafkaPartitionReader(client: client, topic: topic, partition: partition, from: offset)
            var records: [KafkaConsumerMessage] = []
            let deadline = ContinuousClock.now + timeout
            while ContinuousClock.now < deadline {
                guard let polled = reader.next(timeoutMilliseconds: 200) else { continue }
                switch polled {
                case .endOfPartition:
                    return records
                case .error(let code, _):
                    throw KafkaError("could not read \(topic)[\(partition)] at \(offset)", code: code)
                case .record(let record):
                    if record.offset >= end { return records }
                    records.append(record)
                    if record.offset + 1 >= end { return records }
                }
            }
            return records
        }
    }

    /// The timestamp (create or log-append time) of the record at `offset`, or nil when
    /// there is no record there (yet) or it carries no timestamp.
    package func timestamp(
        topic: String, partition: Int32, offset: Int64, timeout: Duration = .seconds(5)
    ) async throws(KafkaError) -> Date? {
        try await records(topic: topic, partition: partition, from: offset, to: offset + 1, timeout: timeout).first?.timestamp
    }
}

/// How far a consumer group is behind, per partition.
package struct KafkaPartitionLag: Sendable, Hashable {
    package var partition: KafkaTopicPartition
    /// The next offset the group will read; `nil` when it has committed nothing.
    package var committed: Int64?
    package var watermarks: KafkaWatermarks

    package init(partition: KafkaTopicPartition, committed: Int64?, watermarks: KafkaWatermarks) {
        self.partition = partition
        self.committed = committed
        self.watermarks = watermarks
    }

    /// Records in the log not yet processed: the end offset minus the committed offset.
    /// A group that committed nothing starts at the earliest record still stored.
    package var records: Int64 {
        let start = max(committed ?? watermarks.low, watermarks.low)
        return max(watermarks.high - start, 0)
    }

    /// The offset of the oldest unprocessed record, when there is one.
    package var firstUnprocessedOffset: Int64? {
        records > 0 ? max(committed ?? watermarks.low, watermarks.low) : nil
    }
}

extension KafkaOffsetReader {
    /// Lag of every partition of `topic` against the given committed offsets.
    package func lag(topic: String, committed: (_ partitions: [Int32]) async throws -> [Int32: Int64]) async throws
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
