import Crdkafka
import Logging
import NIOConcurrencyHelpers
import ServiceLifecycle

/// Publishes records reliably: idempotent with `acks=all`, so a retried send
/// never duplicates or reorders within a partition, and each `send` resolves
/// only once the broker has acknowledged the record.
///
/// `run()` must be running for sends to complete: it serves delivery reports
/// and librdkafka's logs on a dedicated thread, and on graceful shutdown
/// waits for everything queued to be acknowledged before it returns.
public final class KafkaProducer: Service, Sendable {
    private let client: RDKafkaClient
    private let mainQueue: RDKafkaQueue
    private typealias Report = Result<KafkaDeliveryReceipt, KafkaError>
    private let state = NIOLockedValueBox(ProducerStateMachine<CheckedContinuation<Report, Never>>())
    private let stopRequested = NIOLockedValueBox(false)
    /// Senders waiting for room in librdkafka's local queue, woken by the next delivery report.
    private let space = NIOLockedValueBox(QueueSpace())
    private let messageTimeout: Duration
    private let logger: Logger
    /// The largest record this producer sends (`message.max.bytes`, librdkafka's default
    /// 1,000,000 unless configured): a larger one is refused without reaching the broker.
    public let maximumMessageBytes: Int

    public init(configuration: KafkaProducerConfiguration, logger: Logger) throws {
        var logger = logger
        logger[metadataKey: "kafka.client"] = "\(configuration.clientId)"
        self.logger = logger
        self.messageTimeout = configuration.messageTimeout
        self.maximumMessageBytes = configuration.properties["message.max.bytes"].flatMap { Int($0) } ?? 1_000_000
        let client = try RDKafkaClient.make(
            type: RD_KAFKA_PRODUCER, properties: configuration.librdkafkaProperties(), logger: logger
        ) { conf in
            rd_kafka_conf_set_events(conf, Int32(RD_KAFKA_EVENT_DR | RD_KAFKA_EVENT_LOG | RD_KAFKA_EVENT_ERROR))
        }
        try Self.checkGuarantees(of: client)
        self.client = client
        self.mainQueue = RDKafkaQueue(client: client, queue: rd_kafka_queue_get_main(client.handle))
        rd_kafka_set_log_queue(client.handle, nil)
    }

    /// Reads back what the client runs with: every record acknowledged by all in-sync replicas
    /// (`acks=all`, which librdkafka reports as -1) and idempotent, or the producer is refused.
    private static func checkGuarantees(of client: RDKafkaClient) throws(KafkaError) {
        func setting(_ name: String) -> String? {
            guard let conf = rd_kafka_conf(client.handle) else { return nil }
            var value = [CChar](repeating: 0, count: 64)
            var size = value.count
            guard rd_kafka_conf_get(conf, name, &value, &size) == RD_KAFKA_CONF_OK else { return nil }
            return RDKafkaClient.string(value)
        }
        let acks = setting("acks")
        let idempotence = setting("enable.idempotence")
        guard acks == "-1", idempotence == "true" else {
            throw KafkaError(
                message: "the producer must run with acks=all and enable.idempotence=true",
                reason: "it runs with acks=\(acks ?? "?") and enable.idempotence=\(idempotence ?? "?")")
        }
    }

    /// Serves delivery reports and logs until graceful shutdown (or cancellation),
    /// then waits for every queued record's report before returning.
    public func run() async throws {
        try state.withLockedValue { $0.startRunning() }.get()
        await withTaskCancellationHandler {
            await withGracefulShutdownHandler {
                await PollThread.run(name: "kafka-producer") { self.pollUntilStoppedThenFlush() }
            } onGracefulShutdown: {
                self.requestStop()
            }
        } onCancel: {
            self.requestStop()
        }
    }

    /// Resolves when the broker acknowledged the record, throws ``KafkaError`` when it failed
    /// (after librdkafka's retries, within `messageTimeout`). A full local queue is waited out,
    /// never dropped. Cancelling the caller does not recall an enqueued record.
    public func send(_ record: KafkaRecord) async throws -> KafkaDeliveryReceipt {
        let id = try allocateId()
        try await enqueue(record, id: id)
        return try await report(for: id).get()
    }

    /// Sends all and waits until every one is acknowledged; throws the first failure.
    public func sendAll(_ records: [KafkaRecord]) async throws {
        guard !records.isEmpty else { return }
        for result in await send(records) {
            if case .failure(let error) = result { throw error }
        }
    }

    /// Enqueues all, then awaits all reports: one result per record, in order.
    public func send(_ records: [KafkaRecord]) async -> [Result<KafkaDeliveryReceipt, KafkaError>] {
        var enqueued: [Result<UInt, KafkaError>] = []
        enqueued.reserveCapacity(records.count)
        for record in records {
            do throws(KafkaError) {
                let id = try allocateId()
                try await enqueue(record, id: id)
                enqueued.append(.success(id))
            } catch {
                enqueued.append(.failure(error))
            }
        }
        var results: [Result<KafkaDeliveryReceipt, KafkaError>] = []
        results.reserveCapacity(records.count)
        for entry in enqueued {
            switch entry {
            case .success(let id): results.append(await report(for: id))
            case .failure(let error): results.append(.failure(error))
            }
        }
        return results
    }

    private func allocateId() throws(KafkaError) -> UInt {
        try state.withLockedValue { $0.allocateId() }.get()
    }

    private func requestStop() {
        stopRequested.withLockedValue { $0 = true }
    }

    /// Enqueues, waiting while librdkafka's local queue is full: that is
    /// backpressure from a slow broker, and the record must not be dropped.
    private func enqueue(_ record: KafkaRecord, id: UInt) async throws(KafkaError) {
        while true {
            let reportsBefore = space.withLockedValue { $0.reports }
            switch RDKafkaProduce.produce(record, opaque: id, handle: client.handle) {
            case .enqueued:
                return
            case .failed(let error):
                throw error
            case .queueFull:
                if state.withLockedValue({ $0.lifecycle == .finished }) { throw KafkaError.shutDown("send") }
                if Task.isCancelled {
                    throw KafkaError(message: "send to \(record.topic) was cancelled while the local queue was full")
                }
                await waitForSpace(after: reportsBefore)
            }
        }
    }

    /// Returns once a delivery report has been served since `reports` was read:
    /// a report is what frees room in the local queue.
    private func waitForSpace(after reports: UInt64) async {
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            let now = space.withLockedValue { space in
                guard space.reports == reports, !space.closed else { return true }
                space.waiters.append(waiter)
                return false
            }
            if now { waiter.resume() }
        }
    }

    private func spaceFreed(closing: Bool = false) {
        let waiters = space.withLockedValue { space in
            space.reports &+= 1
            if closing { space.closed = true }
            defer { space.waiters.removeAll() }
            return space.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    private func report(for id: UInt) async -> Report {
        await withCheckedContinuation { waiter in
            if let known = state.withLockedValue({ $0.wait(id: id, waiter: waiter) }) {
                waiter.resume(returning: known)
            }
        }
    }

    // MARK: - The poll thread

    private func pollUntilStoppedThenFlush() {
        while !stopRequested.withLockedValue({ $0 }) {
            serveEvents(timeoutMilliseconds: 100)
        }
        state.withLockedValue { $0.beginFlushing() }
        // rd_kafka_flush does not serve events when the event API is used, so
        // drain by polling until everything queued has been reported.
        let deadline = ContinuousClock.now + messageTimeout + .seconds(1)
        while rd_kafka_outq_len(client.handle) > 0 && ContinuousClock.now < deadline {
            serveEvents(timeoutMilliseconds: 50)
        }
        let left = rd_kafka_outq_len(client.handle)
        if left > 0 { logger.warning("producer shut down with \(left) records unacknowledged") }
        spaceFreed(closing: true)
        for waiter in state.withLockedValue({ $0.finish() }) {
            waiter.resume(
                returning: .failure(KafkaError(message: "the producer shut down before the broker acknowledged the record")))
        }
    }

    private func serveEvents(timeoutMilliseconds: Int32) {
        guard let event = rd_kafka_queue_poll(mainQueue.queue, timeoutMilliseconds) else { return }
        let type = Int32(rd_kafka_event_type(event))
        defer {
            rd_kafka_event_destroy(event)
            // Destroying the report's messages is what makes room in the local queue.
            if type == Int32(RD_KAFKA_EVENT_DR) { spaceFreed() }
        }
        switch type {
        case Int32(RD_KAFKA_EVENT_DR):
            while let message = rd_kafka_event_message_next(event) {
                let id = UInt(bitPattern: message.pointee._private)
                let report = RDKafkaProduce.deliveryReport(message)
                if let waiter = state.withLockedValue({ $0.reportArrived(id: id, report: report) }) {
                    waiter.resume(returning: report)
                }
            }
        case Int32(RD_KAFKA_EVENT_LOG):
            var facility: UnsafePointer<CChar>?
            var text: UnsafePointer<CChar>?
            var level: Int32 = 7
            if rd_kafka_event_log(event, &facility, &text, &level) == 0 {
                logger.rdkafka(
                    level: level, facility: facility.map { String(cString: $0) } ?? "",
                    message: text.map { String(cString: $0) } ?? "")
            }
        case Int32(RD_KAFKA_EVENT_ERROR):
            let code = rd_kafka_event_error(event)
            let text = String(cString: rd_kafka_event_error_string(event))
            if rd_kafka_event_error_is_fatal(event) != 0 {
                logger.error("fatal producer error: \(client.fatalError()?.description ?? text)")
            } else {
                logger.notice("producer: \(String(cString: rd_kafka_err2name(code))): \(text)")
            }
        default:
            break
        }
    }
}

/// How many delivery report events were served, and who waits for the next one.
private struct QueueSpace: Sendable {
    var reports: UInt64 = 0
    var closed = false
    var waiters: [CheckedContinuation<Void, Never>] = []
}
