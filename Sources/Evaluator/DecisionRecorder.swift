import Foundation
import Logging
import Metrics
import NIOConcurrencyHelpers
import Persistence
import ServiceLifecycle

/// Writes the decision records of committed batches beside the next batches, so that keeping
/// them costs the evaluator's batch loop (which waits on round trips) almost nothing: written
/// inside the batch's transaction, one row per fix took a third of its throughput.
///
/// Records are queued only once their batch committed, so every record tells of a decision
/// that holds. They are written in the order they were queued (each device's in evaluation
/// order), at most once per `writeInterval`: a device's records written together share a
/// row, so a busy device costs Postgres a row per write rather than one per fix, and a record
/// is readable within about that interval. At most `maximumQueuedRecords` wait: a batch that
/// would exceed it waits, and the evaluator slows to what Postgres takes. A process that dies
/// loses the records still queued (the decisions themselves are safe); a graceful stop writes
/// them first. A record of a device erased meanwhile is not written.
final class DecisionRecorder: Service, Sendable {
    let database: Database
    let store: DecisionStore
    let logger: Logger
    let maximumQueuedRecords: Int
    let writeInterval: Duration
    private let queue = NIOLockedValueBox<[NewDecisionRecord]>([])
    private let wakes: AsyncStream<Void>
    private let wakeUp: AsyncStream<Void>.Continuation
    private let dropped = Counter(label: "checkin_evaluator_decision_records_dropped_total")
    /// Records committed and not yet written: near `maximumQueuedRecords`, Postgres is what
    /// holds the evaluator back.
    private let queued = Gauge(label: "checkin_evaluator_decision_records_queued")
    private let written = Counter(label: "checkin_evaluator_decision_records_written_total")

    /// The fixes topic whose position locks a write holds (see `ErasureStore`).
    let fixesTopic: String

    init(
        database: Database, fixesTopic: String, logger: Logger, maximumQueuedRecords: Int = 100_000,
        writeInterval: Duration = .milliseconds(250)
    ) {
        self.database = database
        self.fixesTopic = fixesTopic
        self.store = DecisionStore(logger: logger)
        self.logger = logger
        self.maximumQueuedRecords = maximumQueuedRecords
        self.writeInterval = writeInterval
        (wakes, wakeUp) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Queues a committed batch's records; waits while the queue is full.
    func record(_ records: [NewDecisionRecord]) async {
        guard !records.isEmpty else { return }
        while queue.withLockedValue({ $0.count }) >= maximumQueuedRecords, !Task.isCancelled {
            wakeUp.yield()
            try? await Task.sleep(for: .milliseconds(2))
        }
        let waiting = queue.withLockedValue { queue in
            queue += records
            return queue.count
        }
        queued.record(waiting)
        wakeUp.yield()
    }

    func run() async throws {
        for await _ in wakes.cancelOnGracefulShutdown() {
            let started = ContinuousClock.now
            await writeQueued()
            try? await Task.sleep(until: started + writeInterval)
        }
        // Stopping: what the last batches decided is written before the database goes.
        await writeQueued()
    }

    /// Writes everything queued, a few attempts per chunk; a chunk that still fails is
    /// dropped, logged and counted (`checkin_evaluator_decision_records_dropped_total`).
    func writeQueued() async {
        while true {
            let (chunk, left) = queue.withLockedValue { waiting -> ([NewDecisionRecord], Int) in
                let chunk = Array(waiting.prefix(50_000))
                waiting.removeFirst(chunk.count)
                return (chunk, waiting.count)
            }
            queued.record(left)
            guard !chunk.isEmpty else { return }
            var attempt = 1
            while true {
                do {
                    try await database.withTransaction { [fixesTopic] connection in
                        // An erasure at these positions waits for this write, or this write sees it.
                        try await ErasureStore.holdPositions(
                            topic: fixesTopic, partitions: Set(chunk.compactMap(\.partition)), on: connection, logger: logger)
                        try await store.append(chunk, on: connection)
                    }
                    written.increment(by: chunk.count)
                    break
                } catch {
                    if attempt == 3 {
                        dropped.increment(by: chunk.count)
                        logger.error(
                            "could not write decision records; dropping them",
                            metadata: ["records": "\(chunk.count)", "error": "\(String(reflecting: error))"])
                        break
                    }
                    attempt += 1
                    try? await Task.sleep(for: .milliseconds(200 * attempt))
                }
            }
        }
    }
}
