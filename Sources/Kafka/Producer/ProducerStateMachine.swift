/// Pairs delivery reports with the tasks awaiting them. A report can arrive
/// before its sender starts waiting (the enqueue and the wait are two steps),
/// so early reports are kept until claimed. Generic over the waiter so the
/// logic can be tested without continuations.
struct ProducerStateMachine<Waiter> {
    typealias Report = Result<KafkaDeliveryReceipt, KafkaError>

    enum Lifecycle {
        case initial
        case running
        /// Shutdown began: still accepting and delivering, while the queue drains.
        case flushing
        case finished
    }

    private(set) var lifecycle: Lifecycle = .initial
    private var nextId: UInt = 1
    private var waiters: [UInt: Waiter] = [:]
    private var early: [UInt: Report] = [:]

    mutating func startRunning() -> Result<Void, KafkaError> {
        guard lifecycle == .initial else { return .failure(KafkaError(message: "KafkaProducer.run() may be called only once")) }
        lifecycle = .running
        return .success(())
    }

    mutating func beginFlushing() {
        if lifecycle == .running || lifecycle == .initial { lifecycle = .flushing }
    }

    /// An id for a record about to be enqueued; it travels as the message's opaque.
    mutating func allocateId() -> Result<UInt, KafkaError> {
        guard lifecycle != .finished else { return .failure(KafkaError.shutDown("send")) }
        if nextId == 0 { nextId = 1 }
        defer { nextId &+= 1 }
        return .success(nextId)
    }

    /// A report arrived: the waiter to resume, if someone is already waiting.
    mutating func reportArrived(id: UInt, report: Report) -> Waiter? {
        if let waiter = waiters.removeValue(forKey: id) { return waiter }
        if lifecycle != .finished { early[id] = report }
        return nil
    }

    /// The report, if it is already known; otherwise the waiter is kept until it is.
    mutating func wait(id: UInt, waiter: Waiter) -> Report? {
        if let report = early.removeValue(forKey: id) { return report }
        guard lifecycle != .finished else {
            return .failure(KafkaError(message: "the producer shut down before the broker acknowledged the record"))
        }
        waiters[id] = waiter
        return nil
    }

    /// Shutdown finished: every waiter left gets a failure.
    mutating func finish() -> [Waiter] {
        lifecycle = .finished
        early.removeAll()
        defer { waiters.removeAll() }
        return Array(waiters.values)
    }
}

extension ProducerStateMachine: Sendable where Waiter: Sendable {}
