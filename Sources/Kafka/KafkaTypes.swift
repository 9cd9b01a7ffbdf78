import struct Foundation.Date

/// A partition of a topic: the unit of ordering, assignment and committed offsets.
public struct KafkaTopicPartition: Sendable, Hashable, CustomStringConvertible {
    public var topic: String
    public var partition: Int32

    public init(topic: String, partition: Int32) {
        self.topic = topic
        self.partition = partition
    }

    public var description: String { "\(topic)[\(partition)]" }
}

/// A record header; Kafka allows a key without a value (`nil`), distinct from an empty value.
public struct KafkaHeader: Sendable, Hashable {
    public var key: String
    public var value: [UInt8]?

    public init(key: String, value: [UInt8]?) {
        self.key = key
        self.value = value
    }
}

/// A record to produce. Records with the same key go to the same partition
/// (Java-compatible murmur2), which is what keeps per-key order.
public struct KafkaRecord: Sendable {
    public var topic: String
    public var key: [UInt8]?
    public var value: [UInt8]
    public var headers: [KafkaHeader]
    /// `nil` lets the partitioner choose from the key.
    public var partition: Int32?
    /// The record's create time; `nil` stamps it with the producer's clock when it is sent.
    public var timestamp: Date?

    public init(
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
public struct KafkaDeliveryReceipt: Sendable, Hashable {
    public var topic: String
    public var partition: Int32
    public var offset: Int64

    public init(topic: String, partition: Int32, offset: Int64) {
        self.topic = topic
        self.partition = partition
        self.offset = offset
    }
}

/// A record read by a ``KafkaConsumer``, copied out of librdkafka's buffers.
public struct KafkaConsumerMessage: Sendable {
    /// What the record takes in memory, near enough: its value, key and headers.
    public var byteCount: Int {
        value.count + (key?.count ?? 0) + headers.reduce(0) { $0 + $1.key.utf8.count + ($1.value?.count ?? 0) }
    }

    public var topic: String
    public var partition: Int32
    public var offset: Int64
    public var key: [UInt8]?
    public var value: [UInt8]
    public var headers: [KafkaHeader]
    /// The record's timestamp (create or log-append time), when the broker gave one.
    public var timestamp: Date?

    public init(
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

    public var topicPartition: KafkaTopicPartition { KafkaTopicPartition(topic: topic, partition: partition) }
}
