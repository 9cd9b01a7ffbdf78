import Crdkafka

/// An `rd_kafka_topic_partition_list_t` made from Swift values, destroyed with this object.
final class TopicPartitionList {
    private let pointer: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>

    /// Partitions, each at an offset (`RDKafkaClient.committedOffset`: the group's).
    init(_ offsets: [KafkaTopicPartition: Int64]) {
        pointer = rd_kafka_topic_partition_list_new(Int32(offsets.count))!
        for (partition, offset) in offsets {
            rd_kafka_topic_partition_list_add(pointer, partition.topic, partition.partition).pointee.offset = offset
        }
    }

    /// Partitions whose offsets do not matter to the call (pause, resume, unassign).
    init(_ partitions: [KafkaTopicPartition]) {
        pointer = rd_kafka_topic_partition_list_new(Int32(partitions.count))!
        for partition in partitions { rd_kafka_topic_partition_list_add(pointer, partition.topic, partition.partition) }
    }

    /// Whole topics, as a subscription names them.
    init(topics: [String]) {
        pointer = rd_kafka_topic_partition_list_new(Int32(topics.count))!
        for topic in topics { rd_kafka_topic_partition_list_add(pointer, topic, RD_KAFKA_PARTITION_UA) }
    }

    /// Takes over a list librdkafka allocated for the caller.
    init(adopting pointer: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>) {
        self.pointer = pointer
    }

    deinit {
        rd_kafka_topic_partition_list_destroy(pointer)
    }

    /// Lends the list to a C call; it lives at least until the call returns.
    func withPointer<Result>(_ body: (UnsafeMutablePointer<rd_kafka_topic_partition_list_t>) -> Result) -> Result {
        withExtendedLifetime(self) { body(pointer) }
    }

    var isEmpty: Bool { pointer.pointee.cnt == 0 }

    /// The partitions in list order, with their offsets and per-partition errors.
    var elements: [(partition: KafkaTopicPartition, offset: Int64, error: KafkaError.Code?)] {
        withPointer { Self.elements($0) }
    }

    static func elements(
        _ list: UnsafePointer<rd_kafka_topic_partition_list_t>?
    ) -> [(partition: KafkaTopicPartition, offset: Int64, error: KafkaError.Code?)] {
        guard let list, list.pointee.cnt > 0, let elems = list.pointee.elems else { return [] }
        return (0..<Int(list.pointee.cnt)).map { index in
            let element = elems[index]
            return (
                KafkaTopicPartition(topic: String(cString: element.topic), partition: element.partition),
                element.offset, element.err == RD_KAFKA_RESP_ERR_NO_ERROR ? nil : KafkaError.Code(element.err)
            )
        }
    }

    /// The partitions of a list librdkafka lends to a callback.
    static func partitions(_ list: UnsafePointer<rd_kafka_topic_partition_list_t>?) -> [KafkaTopicPartition] {
        elements(list).map(\.partition)
    }
}
