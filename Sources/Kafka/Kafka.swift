import Crdkafka

/// The version of the linked librdkafka.
public var librdkafkaVersion: String { String(cString: rd_kafka_version_str()) }
