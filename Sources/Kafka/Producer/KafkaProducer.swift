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
package final class KafkaProducer: Service, Sendable {
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
    package let maximumMessageBytes: Int

    package init(configuration: KafkaProducerConfiguration, logger: Logger) throws {
        var logger = logger
        logger[metadataKey: "kafka.client"] = "\(configuration.clientId)"
        self.logger = logger
        self.messageTimeout = configuration.messageTimeout
        self.maximumMessageBytes = configuration.properties["message.max.bytes"].flatMap { Int($0) } ?? 1_000_000
        let client = try RDKafkaClient.makeProducer(properties: configuration.librdkafkaProperties(), logger: logger)
        try Self.checkGuarantees(of: client)
        self.client = client
        self.mainQueue = client.mainQueue()
    }

    /// Reads back what the client runs with: every record acknowledged by all in-sync replicas
    /// (`acks=all`, which librdkafka reports as -1) and idempotent, or the producer is refused.
    private static func checkGuarantees(of client: RDKafkaClient) throws(KafkaError) {
        let acks = client.configurationValue("acks")
        let idempotence = client.configurationValue("enable.idempotence")
        guard acks == "-1", idempotence == "true" else {
            throw KafkaError(
                message: "the producer must run with acks=all and enable.idempotence=true",
                reason: "it runs with acks=\(acks ?? "?") and enable.idempotence=\(idempotence ?? "?")")
        }
    }

    /// Serves delivery reports and logs until graceful shutdown (or cancellation),
    /// then waits for every queued record's report before returning.
    package func run() async throws {
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
    package func send(_ record: KafkaRecord) async throws -> KafkaDeliveryReceipt {
        let id = try allocateId()
        try await enqueue(record, id: id)
        return try await report(for: id).get()
    }

    /// Sends all and waits until every one is acknowledged; throws the first failure.
    package func sendAll(_ records: [KafkaRecord]) async throws {
        guard !records.isEmpty else { return }
        for result in await send(records) {
            if case .failure(let error) = result { throw error }
        }
    }

    /// Enqueues all, then awaits all reports: one result per record, in order.
    package func send(_ records: [KafkaRecord]) async -> [Result<KafkaDeliveryReceipt, KafkaError>] {
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
            switch client.produce(record, id: id) {
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
        // librdkafka's flush does not serve events when the event API is used, so
        // drain by polling until everything queued has been reported.
        let deadline = ContinuousClock.now + messageTimeout + .seconds(1)
        while client.unacknowledgedCount > 0 && ContinuousClock.now < deadline {
            serveEvents(timeoutMilliseconds: 50)
        }
        let left = client.unacknowledgedCount
        if left > 0 { logger.warning("producer shut down with \(left) records unacknowledged") }
        spaceFreed(closing: true)
        for waiter in state.withLockedValue({ $0.finish() }) {
            waiter.resume(
                returning: .failure(KafkaError(message: "the producer shut down before the broker acknowledged the record")))
        }
    }

    private func serveEvents(timeoutMilliseconds: Int32) {
        var delivered = false
        mainQueue.serveEvent(timeoutMilliseconds: timeoutMilliseconds) { event in
            switch event {
            case .deliveryReports(let reports):
                delivered = true
                for (id, report) in reports {
                    if let waiter = state.withLockedValue({ $0.reportArrived(id: id, report: report) }) {
                        waiter.resume(returning: report)
                    }
                }
            case .log(let level, let facility, let message):
                logger.rdkafka(level: level, facility: facility, message: message)
            case .error(let code, let reason, let isFatal):
                if isFatal {
                    logger.error("fatal producer error: \(client.fatalError()?.description ?? reason)")
                } else {
                    logger.notice("producer: \(code): \(reason)")
                }
            case .other:
                break
            }
        }
        // The reports' messages are destroyed with their event: that made room in the local queue.
        if delivered { spaceFreed() }
    }
}

/// How many delivery report events were served, and who waits for the next one.
private struct QueueSpace: Sendable {
    var reports: UInt64 = 0
    var closed = false
    var waiters: [CheckedContinuation<Void, Never>] = []
}
