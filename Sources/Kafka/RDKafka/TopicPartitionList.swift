import Crdkafka

/// Conversions between `rd_kafka_topic_partition_list_t` and Swift values.
/// A list made here is the caller's to destroy (`rd_kafka_topic_partition_list_destroy`).
enum TopicPartitionList {
    typealias Pointer = UnsafeMutablePointer<rd_kafka_topic_partition_list_t>

    static func make(_ offsets: [KafkaTopicPartition: Int64]) -> Pointer {
        let list = rd_kafka_topic_partition_list_new(Int32(offsets.count))!
        for (partition, offset) in offsets {
            rd_kafka_topic_partition_list_add(list, partition.topic, partition.partition).pointee.offset = offset
        }
        return list
    }

    static func make(topics: [String]) -> Pointer {
        let list = rd_kafka_topic_partition_list_new(Int32(topics.count))!
        for topic in topics { rd_kafka_topic_partition_list_add(list, topic, RD_KAFKA_PARTITION_UA) }
        return list
    }

    /// The partitions in list order, with their offsets and per-partition errors.
    static func elements(
        _ list: UnsafePointer<rd_kafka_topic_partition_list_t>?
    ) -> [(partition: KafkaTopicPartition, offset: Int64, error: rd_kafka_resp_err_t)] {
        guard let list, list.pointee.cnt > 0, let elems = list.pointee.elems else { return [] }
        return (0..<Int(list.pointee.cnt)).map { index in
            let element = elems[index]
            return (
                KafkaTopicPartition(topic: String(cString: element.topic), partition: element.partition),
                element.offset, element.err
            )
        }
    }

    static func partitions(_ list: UnsafePointer<rd_kafka_topic_partition_list_t>?) -> [KafkaTopicPartition] {
        elements(list).map(\.partition)
    }
}
