import Crdkafka
import Logging
import struct Foundation.Date

extension RDKafkaClient {
    /// A producer whose delivery reports, logs and errors wait on its main queue as events
    /// (see `RDKafkaQueue`), for one thread to serve.
    static func makeProducer(properties: [String: String], logger: Logger) throws(KafkaError) -> RDKafkaClient {
        try make(.producer, properties: properties, logger: logger) { conf in
            rd_kafka_conf_set_events(conf, Int32(RD_KAFKA_EVENT_DR | RD_KAFKA_EVENT_LOG | RD_KAFKA_EVENT_ERROR))
        }
    }

    /// The queue the producer's events wait on; logs are routed to it as well.
    func mainQueue() -> RDKafkaQueue {
        let queue = RDKafkaQueue(client: self, queue: rd_kafka_queue_get_main(handle))
        routeLogsToMainQueue()
        return queue
    }

    /// Records enqueued and not yet reported delivered or failed (and requests in flight).
    var unacknowledgedCount: Int32 { rd_kafka_outq_len(handle) }

    /// Enqueues one record; `id` comes back with its delivery report.
    func produce(_ record: KafkaRecord, id: UInt) -> RDKafkaProduce.Outcome {
        RDKafkaProduce.produce(record, opaque: id, handle: handle)
    }
}

/// Enqueueing one record with `rd_kafka_produceva` and reading delivery reports.
enum RDKafkaProduce {
    enum Outcome {
        case enqueued
        /// The local queue is full (`_QUEUE_FULL`): wait for the broker and retry.
        case queueFull
        case failed(KafkaError)
    }

    /// A non-null address for empty payloads, so an empty value stays empty instead of becoming a null (tombstone).
    private nonisolated(unsafe) static let emptyPayload = UnsafeMutableRawPointer.allocate(byteCount: 1, alignment: 1)

    fileprivate static func produce(_ record: KafkaRecord, opaque: UInt, handle: OpaquePointer) -> Outcome {
        // librdkafka copies everything (RD_KAFKA_MSG_F_COPY), so the buffers need only live through the call.
        record.topic.withCString { topic in
            record.value.withUnsafeBytes { value in
                withOptionalBytes(record.key) { key in
                    var values: [rd_kafka_vu_t] = []
                    values.reserveCapacity(8)
                    var vu = rd_kafka_vu_t()
                    vu.vtype = RD_KAFKA_VTYPE_TOPIC
                    vu.u.cstr = topic
                    values.append(vu)
                    if let partition = record.partition {
                        vu = rd_kafka_vu_t()
                        vu.vtype = RD_KAFKA_VTYPE_PARTITION
                        vu.u.i32 = partition
                        values.append(vu)
                    }
                    vu = rd_kafka_vu_t()
                    vu.vtype = RD_KAFKA_VTYPE_VALUE
                    vu.u.mem.ptr = value.isEmpty ? emptyPayload : UnsafeMutableRawPointer(mutating: value.baseAddress)
                    vu.u.mem.size = value.count
                    values.append(vu)
                    if let key {
                        vu = rd_kafka_vu_t()
                        vu.vtype = RD_KAFKA_VTYPE_KEY
                        vu.u.mem.ptr = key.isEmpty ? emptyPayload : UnsafeMutableRawPointer(mutating: key.baseAddress)
                        vu.u.mem.size = key.count
                        values.append(vu)
                    }
                    if let timestamp = record.timestamp {
                        vu = rd_kafka_vu_t()
                        vu.vtype = RD_KAFKA_VTYPE_TIMESTAMP
                        vu.u.i64 = Int64((timestamp.timeIntervalSince1970 * 1000).rounded())
                        values.append(vu)
                    }
                    vu = rd_kafka_vu_t()
                    vu.vtype = RD_KAFKA_VTYPE_OPAQUE
                    vu.u.ptr = UnsafeMutableRawPointer(bitPattern: opaque)
                    values.append(vu)
                    vu = rd_kafka_vu_t()
                    vu.vtype = RD_KAFKA_VTYPE_MSGFLAGS
                    vu.u.i = RD_KAFKA_MSG_F_COPY
                    values.append(vu)
                    let headers = makeHeaders(record.headers)
                    if let headers {
                        vu = rd_kafka_vu_t()
                        vu.vtype = RD_KAFKA_VTYPE_HEADERS
                        vu.u.headers = headers
                        values.append(vu)
                    }
                    guard let error = rd_kafka_produceva(handle, values, values.count) else { return .enqueued }
                    // Headers belong to librdkafka only when the record was enqueued.
                    if let headers { rd_kafka_headers_destroy(headers) }
                    if rd_kafka_error_code(error) == RD_KAFKA_RESP_ERR__QUEUE_FULL {
                        rd_kafka_error_destroy(error)
                        return .queueFull
                    }
                    return .failed(KafkaError("could not enqueue a record for topic \(record.topic)", consuming: error))
                }
            }
        }
    }

    private static func makeHeaders(_ headers: [KafkaHeader]) -> OpaquePointer? {
        guard !headers.isEmpty, let list = rd_kafka_headers_new(headers.count) else { return nil }
        for header in headers {
            if let value = header.value {
                value.withUnsafeBytes { bytes in
                    _ = rd_kafka_header_add(
                        list, header.key, -1, bytes.isEmpty ? UnsafeRawPointer(emptyPayload) : bytes.baseAddress, bytes.count)
                }
            } else {
                _ = rd_kafka_header_add(list, header.key, -1, nil, 0)
            }
        }
        return list
    }

    private static func withOptionalBytes<R>(_ bytes: [UInt8]?, _ body: (UnsafeRawBufferPointer?) -> R) -> R {
        guard let bytes else { return body(nil) }
        return bytes.withUnsafeBytes { body($0) }
    }

    /// The outcome carried by a message of a delivery report event.
    static func deliveryReport(_ message: UnsafePointer<rd_kafka_message_t>) -> Result<KafkaDeliveryReceipt, KafkaError> {
        let topic = message.pointee.rkt.map { String(cString: rd_kafka_topic_name($0)) } ?? ""
        let code = message.pointee.err
        guard code == RD_KAFKA_RESP_ERR_NO_ERROR else {
            return .failure(KafkaError("delivery to topic \(topic) failed", code: code))
        }
        return .success(KafkaDeliveryReceipt(topic: topic, partition: message.pointee.partition, offset: message.pointee.offset))
    }
}
