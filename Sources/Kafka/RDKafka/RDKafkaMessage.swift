import Crdkafka
import struct Foundation.Date

/// What one poll for a record returned.
enum RDKafkaPolled {
    case record(KafkaConsumerMessage)
    /// The partition has no more records for now (with `enable.partition.eof`).
    case endOfPartition
    /// librdkafka's error in place of a record, with its text.
    case error(KafkaError.Code, reason: String)
}

/// Reading an `rd_kafka_message_t` into Swift values, copied out of librdkafka's buffers.
enum RDKafkaMessage {
    /// The record or error a polled message carries; the message stays the caller's to destroy.
    static func polled(_ message: UnsafeMutablePointer<rd_kafka_message_t>) -> RDKafkaPolled {
        let code = message.pointee.err
        if code == RD_KAFKA_RESP_ERR_NO_ERROR { return .record(record(message)) }
        if code == RD_KAFKA_RESP_ERR__PARTITION_EOF { return .endOfPartition }
        return .error(KafkaError.Code(code), reason: String(cString: rd_kafka_message_errstr(message)))
    }

    static func record(_ message: UnsafeMutablePointer<rd_kafka_message_t>) -> KafkaConsumerMessage {
        let raw = message.pointee
        let topic = raw.rkt.map { String(cString: rd_kafka_topic_name($0)) } ?? ""
        let value = raw.payload.map { [UInt8](UnsafeRawBufferPointer(start: $0, count: raw.len)) } ?? []
        let key = raw.key.map { [UInt8](UnsafeRawBufferPointer(start: $0, count: raw.key_len)) }
        var headers: [KafkaHeader] = []
        var list: OpaquePointer?
        if rd_kafka_message_headers(message, &list) == RD_KAFKA_RESP_ERR_NO_ERROR, let list {
            var index = 0
            var name: UnsafePointer<CChar>?
            var bytes: UnsafeRawPointer?
            var size = 0
            while rd_kafka_header_get_all(list, index, &name, &bytes, &size) == RD_KAFKA_RESP_ERR_NO_ERROR {
                headers.append(
                    KafkaHeader(
                        key: name.map { String(cString: $0) } ?? "",
                        value: bytes.map { [UInt8](UnsafeRawBufferPointer(start: $0, count: size)) }))
                index += 1
            }
        }
        var timestampType = RD_KAFKA_TIMESTAMP_NOT_AVAILABLE
        let milliseconds = rd_kafka_message_timestamp(message, &timestampType)
        let timestamp =
            timestampType == RD_KAFKA_TIMESTAMP_NOT_AVAILABLE || milliseconds < 0
            ? nil : Date(timeIntervalSince1970: Double(milliseconds) / 1000)
        return KafkaConsumerMessage(
            topic: topic, partition: raw.partition, offset: raw.offset, key: key, value: value, headers: headers,
            timestamp: timestamp)
    }
}

/// Reads one partition from an offset without joining a group (librdkafka's simple
/// consumer); the reading stops when this goes. For blocking threads only.
final class RDKafkaPartitionReader {
    private let client: RDKafkaClient
    private let topic: OpaquePointer
    private let partition: Int32

    init(client: RDKafkaClient, topic name: String, partition: Int32, from offset: Int64) throws(KafkaError) {
        guard let topic = rd_kafka_topic_new(client.handle, name, nil) else {
            throw KafkaError(message: "invalid topic name \(name)")
        }
        guard rd_kafka_consume_start(topic, partition, offset) == 0 else {
            let code = rd_kafka_last_error()
            rd_kafka_topic_destroy(topic)
            throw KafkaError("could not read \(name)[\(partition)] at \(offset)", code: code)
        }
        self.client = client
        self.topic = topic
        self.partition = partition
    }

    deinit {
        rd_kafka_consume_stop(topic, partition)
        rd_kafka_topic_destroy(topic)
    }

    /// The next record (or the end of the partition, or an error); nil when none came
    /// within the timeout, after serving the client's logs.
    func next(timeoutMilliseconds: Int32) -> RDKafkaPolled? {
        guard let message = rd_kafka_consume(topic, partition, timeoutMilliseconds) else {
            client.serveCallbacks()
            return nil
        }
        defer { rd_kafka_message_destroy(message) }
        return RDKafkaMessage.polled(message)
    }
}
