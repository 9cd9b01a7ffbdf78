import Foundation
import Logging
import Metrics
import NIOConcurrencyHelpers
import Persistence
import ServiceLifecycle

/// Writes the decision records of committed batches beside the next batch, so that keeping
/// them costs the evaluator's batch loop (which waits on round trips) almost nothing: written
/// inside the batch's transaction, one row per fix took a third of its throughput.
///
/// Records are queued only once their batch committed, so every record tells of a decision
/// that holds. They are written in the order they were queued (each device's in evaluation
/// order), at most `maximumQueuedRecords` waiting: a batch that would exceed it waits, and
/// the evaluator slows to what Postgres takes. A process that dies loses the records still
/// queued (the decisions themselves are safe); a graceful stop writes them first. A record of
/// a device erased meanwhile is not written.
final class DecisionRecorder: Service, Sendable {
    let database: Database
    let store: DecisionStore
    let logger: Logger
    let maximumQueuedRecords: Int
    private let queue = NIOLockedValueBox<[NewDecisionRecord]>([])
    private let wakes: AsyncStream<Void>
    private let wakeUp: AsyncStream<Void>.Continuation
    private let dropped = Counter(label: "checkin_evaluator_decision_records_dropped_total")

    init(database: Database, logger: Logger, maximumQueuedRecords: Int = 20_000) {
        self.database = database
        self.store = DecisionStore(logger: logger)
        self.logger = logger
        self.maximumQueuedRecords = maximumQueuedRecords
        (wakes, wakeUp) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Queues a committed batch's records; waits while the queue is full.
    func record(_ records: [NewDecisionRecord]) async {
        guard !records.isEmpty else { return }
        while queue.withLockedValue({ $0.count }) >= maximumQueuedRecords, !Task.isCancelled {
            wakeUp.yield()
            try? await Task.sleep(for: .milliseconds(2))
        }
        queue.withLockedValue { $0 += records }
        wakeUp.yield()
    }

    func run() async throws {
        for await _ in wakes.cancelOnGracefulShutdown() {
            await writeQueued()
        }
        // Stopping: what the last batches decided is written before the database goes.
        await writeQueued()
    }

    /// Writes everything queued, a few attempts per chunk; a chunk that still fails is
    /// dropped, logged and counted (`checkin_evaluator_decision_records_dropped_total`).
    func writeQueued() async {
        while true {
            let chunk = queue.withLockedValue { queued -> [NewDecisionRecord] in
                let chunk = Array(queued.prefix(10_000))
                queued.removeFirst(chunk.count)
                return chunk
            }
            guard !chunk.isEmpty else { return }
            var attempt = 1
            while true {
                do {
                    try await database.withTransaction { connection in try await store.append(chunk, on: connection) }
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
