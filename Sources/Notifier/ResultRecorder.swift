import Logging
import NIOConcurrencyHelpers
import Persistence

/// Records attempt results in batches: whatever finished while the previous batch was
/// being written goes in the next one, so the cost is one round trip per batch, not per
/// delivery, and nothing waits for a timer.
///
/// While chaining, the same statement claims each finished device's next delivery (see
/// `WebhookStore.record`), handed to `onRecorded` to be sent.
final class ResultRecorder: Sendable {
    let webhooks: WebhookStore
    let owner: String
    /// Opens the successors claimed with the results.
    let opener: DeliveryOpener
    let logger: Logger
    /// The lease of a delivery claimed with its predecessor's result; nil: none are claimed.
    private let chainLease: NIOLockedValueBox<Duration?>
    /// How long a next delivery whose predecessor is missing waits for it.
    let gapHold: Duration
    /// Called with the ids of each batch once it is written (or given up on), and the
    /// deliveries it claimed.
    let onRecorded: @Sendable (_ recorded: [Int64], _ claimed: [DeliveryAttempt]) -> Void

    private let pending = NIOLockedValueBox<[DeliveryResult]>([])
    private let signals: AsyncStream<Void>
    private let signal: AsyncStream<Void>.Continuation
    /// Most results in one batch.
    let maximumBatch: Int

    init(
        webhooks: WebhookStore, owner: String, opener: DeliveryOpener, chainLease: Duration?, gapHold: Duration,
        maximumBatch: Int = 2000,
        logger: Logger, onRecorded: @escaping @Sendable (_ recorded: [Int64], _ claimed: [DeliveryAttempt]) -> Void
    ) {
        self.webhooks = webhooks
        self.owner = owner
        self.opener = opener
        self.maximumBatch = max(maximumBatch, 1)
        self.chainLease = NIOLockedValueBox(chainLease)
        self.gapHold = gapHold
        self.logger = logger
        self.onRecorded = onRecorded
        (signals, signal) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    func add(_ result: DeliveryResult) {
        pending.withLockedValue { $0.append(result) }
        signal.yield()
    }

    /// Writes batches as results come in, until `finish`.
    func run() async {
        for await _ in signals {
            await flush()
        }
        await flush()
    }

    /// Claims nothing more with results: the dispatcher is no longer sending.
    func stopChaining() {
        chainLease.withLockedValue { $0 = nil }
    }

    /// Ends `run` once what was added so far is written.
    func finish() {
        signal.finish()
    }

    /// Writes everything added so far.
    func flush() async {
        while true {
            let batch = pending.withLockedValue { results -> [DeliveryResult] in
                let batch = Array(results.prefix(maximumBatch))
                results.removeFirst(batch.count)
                return batch
            }
            guard !batch.isEmpty else { return }
            let claimed = await write(batch)
            onRecorded(batch.map(\.deliveryId), claimed)
        }
    }

    /// A batch that cannot be written after a few tries is dropped: its leases run out and
    /// the deliveries are attempted again (at least once, never lost).
    private func write(_ batch: [DeliveryResult]) async -> [DeliveryAttempt] {
        var delay = Duration.milliseconds(100)
        for attempt in 1...5 {
            do {
                let claimed = try await webhooks.record(
                    batch, owner: owner, chainLease: chainLease.withLockedValue { $0 }, gapHold: gapHold)
                return await opener.open(claimed)
            } catch {
                logger.error(
                    "could not record delivery results",
                    metadata: ["results": "\(batch.count)", "try": "\(attempt)", "error": "\(String(reflecting: error))"])
                try? await Task.sleep(for: delay)
                delay *= 2
            }
        }
        return []
    }
}
