import struct Foundation.Date

/// A partition of a topic: the unit of ordering, assignment and committed offsets.
package struct KafkaTopicPartition: Sendable, Hashable, CustomStringConvertible {
    package var topic: String
    package var partition: Int32

    package init(topic: String, partition: Int32) {
        self.topic = topic
        self.partition = partition
    }

    package var description: String { "\(topic)[\(partition)]" }
}

/// A record header; Kafka allows a key without a value (`nil`), distinct from an empty value.
package struct KafkaHeader: Sendable, Hashable {
    package var key: String
    package var value: [UInt8]?

    package init(key: String, value: [UInt8]?) {
        self.key = key
        self.value = value
    }
}

/// A record to produce. Records with the same key go to the same partition
/// (Java-compatible murmur2), which is what keeps per-key order.
package struct KafkaRecord: Sendable {
    package var topic: String
    package var key: [UInt8]?
    package var value: [UInt8]
    package var headers: [KafkaHeader]
    /// `nil` lets the partitioner choose from the key.
    package var partition: Int32?
    /// The record's create time; `nil` stamps it with the producer's clock when it is sent.
    package var timestamp: Date?

    package init(
        topic: String, key: [UInt8]? = nil, value: [UInt8], headers: [KafkaHeader] = [], partition: Int32? = nil,
        timestamp: Date? = nil
    ) {
        self.topic = topic
        self.key = key
        self.value = value
        self.headers = headers
        self.partition = partition
        self.timestamp = timestamp
    }
}

/// Where the broker stored an acknowledged record.
package struct KafkaDeliveryReceipt: Sendable, Hashable {
    package var topic: String
    package var partition: Int32
    package var offset: Int64

    package init(topic: String, partition: Int32, offset: Int64) {
        self.topic = topic
        self.partition = partition
        self.offset = offset
    }
}

/// A record read by a ``KafkaConsumer``, copied out of librdkafka's buffers.
package struct KafkaConsumerMessage: Sendable {
    /// What the record takes in memory, near enough: its value, key and headers.
    package var byteCount: Int {
        value.count + (key?.count ?? 0) + headers.reduce(0) { $0 + $1.key.utf8.count + ($1.value?.count ?? 0) }
    }

    package var topic: String
    package var partition: Int32
    package var offset: Int64
    package var key: [UInt8]?
    package var value: [UInt8]
    package var headers: [KafkaHeader]
    /// The record's timestamp (create or log-append time), when the broker gave one.
    package var timestamp: Date?

    package init(
        topic: String, partition: Int32, offset: Int64, key: [UInt8]? = nil, value: [UInt8],
        headers: [KafkaHeader] = [], timestamp: Date? = nil
    ) {
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.key = key
        self.value = value
        self.headers = headers
        self.timestamp = timestamp
    }

    package var topicPartition: KafkaTopicPartition { KafkaTopicPartition(topic: topic, partition: partition) }
}
