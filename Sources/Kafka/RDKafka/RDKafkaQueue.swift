import Crdkafka

/// An event of a producer's main queue, read into Swift values.
enum RDKafkaEvent {
    /// Records the broker acknowledged or that failed, each with the id it was produced with.
    case deliveryReports([(id: UInt, report: Result<KafkaDeliveryReceipt, KafkaError>)])
    case log(level: Int32, facility: String, message: String)
    /// An error of the client as a whole (`isFatal`: it can no longer be used).
    case error(KafkaError.Code, reason: String, isFatal: Bool)
    case other
}

/// A queue reference (`rd_kafka_queue_t`), released before its client is destroyed.
final class RDKafkaQueue: @unchecked Sendable {
    /// `@unchecked`: librdkafka queues are thread-safe; the pointer never changes.
    private let queue: OpaquePointer
    /// Keeps the handle alive for as long as the queue is.
    private let client: RDKafkaClient

    init(client: RDKafkaClient, queue: OpaquePointer?) {
        self.client = client
        self.queue = queue!
    }

    deinit {
        rd_kafka_queue_destroy(queue)
    }

    /// Waits up to the timeout for one event and hands it to `body`; the event is destroyed
    /// once `body` returns (destroying a delivery report is what frees room in the producer's
    /// local queue). Nothing happens when no event came.
    func serveEvent(timeoutMilliseconds: Int32, _ body: (RDKafkaEvent) -> Void) {
        guard let event = rd_kafka_queue_poll(queue, timeoutMilliseconds) else { return }
        defer { rd_kafka_event_destroy(event) }
        body(Self.read(event))
    }

    private static func read(_ event: OpaquePointer) -> RDKafkaEvent {
        switch Int32(rd_kafka_event_type(event)) {
        case Int32(RD_KAFKA_EVENT_DR):
            var reports: [(id: UInt, report: Result<KafkaDeliveryReceipt, KafkaError>)] = []
            while let message = rd_kafka_event_message_next(event) {
                reports.append((UInt(bitPattern: message.pointee._private), RDKafkaProduce.deliveryReport(message)))
            }
            return .deliveryReports(reports)
        case Int32(RD_KAFKA_EVENT_LOG):
            var facility: UnsafePointer<CChar>?
            var text: UnsafePointer<CChar>?
            var level: Int32 = 7
            guard rd_kafka_event_log(event, &facility, &text, &level) == 0 else { return .other }
            return .log(
                level: level, facility: facility.map { String(cString: $0) } ?? "",
                message: text.map { String(cString: $0) } ?? "")
        case Int32(RD_KAFKA_EVENT_ERROR):
            return .error(
                KafkaError.Code(rd_kafka_event_error(event)), reason: String(cString: rd_kafka_event_error_string(event)),
                isFatal: rd_kafka_event_error_is_fatal(event) != 0)
        default:
            return .other
        }
    }
}
