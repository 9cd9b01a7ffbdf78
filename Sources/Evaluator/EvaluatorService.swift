import BatchProcessing
import Dispatch
import Foundation
import Geofence
import Kafka
import Logging
import Metrics
import Persistence
import ServiceLifecycle
import Shared

/// Consumes `checkin.fixes` in the evaluator group and processes batch after batch.
/// A batch that fails because Postgres or the broker is away is retried until it
/// succeeds, never skipped, because skipping would lose check-ins; a record that
/// fails for any other reason is isolated and dead-lettered, so that one tenant's
/// record never stops another's.
package final class EvaluatorService: Service, Sendable {
    let consumer: KafkaConsumer
    let processor: FixBatchProcessor
    let isolator: PoisonIsolator<FixBatchProcessor.Outcome>
    let gate: BatchGate
    let logger: Logger

    let fixesCounter = Counter(label: "checkin_evaluator_fixes_total", dimensions: [("outcome", "evaluated")])
    let lateCounter = Counter(label: "checkin_evaluator_fixes_total", dimensions: [("outcome", "late")])
    let duplicateCounter = Counter(label: "checkin_evaluator_fixes_total", dimensions: [("outcome", "duplicate")])
    let invalidCounter = Counter(label: "checkin_evaluator_fixes_total", dimensions: [("outcome", "invalid")])
    /// Fixes accepted before an erasure of their device, dropped when they were reached.
    let erasedCounter = Counter(label: "checkin_evaluator_fixes_total", dimensions: [("outcome", "erased")])
    let checkInCounter = Counter(label: "checkin_evaluator_events_total", dimensions: [("type", "checkin"), ("decided_by", "fix")])
    let checkOutCounter = Counter(label: "checkin_evaluator_events_total", dimensions: [("type", "checkout"), ("decided_by", "fix")])
    let batchTimer = Metrics.Timer(label: "checkin_evaluator_batch_seconds")
    let metrics = EvaluatorMetrics()

    init(
        consumer: KafkaConsumer, processor: FixBatchProcessor, gate: BatchGate, health: ProcessingHealth,
        attemptTimeout: Duration, logger: Logger
    ) {
        self.consumer = consumer
        self.processor = processor
        self.gate = gate
        self.logger = logger
        let database = processor.database
        self.isolator = PoisonIsolator(
            attemptTimeout: attemptTimeout, health: health, logger: logger,
            attempt: { try await processor.process($0) },
            deadLetter: { try await processor.setAside($0, reason: $1) },
            stillOwned: { processor.leases.owns($0.topicPartition) },
            unhealthyComponent: { await database.isReachable(within: .seconds(2)) ? nil : "database" },
            signOfLife: { consumer.noteProgress() })
    }

    package func run() async throws {
        for try await batch in consumer.batches.cancelOnGracefulShutdown() {
            let started = DispatchTime.now()
            await gate.enter()
            let settlement = await isolator.settle(batch)
            await gate.leave()
            guard let settlement else { return }
            batchTimer.recordInterval(since: started)
            for outcome in settlement.outcomes { record(outcome) }
            // Every record of a partition still held is now processed or dead-lettered.
            var done: [KafkaTopicPartition: Int64] = [:]
            for message in batch where processor.leases.owns(message.topicPartition) {
                done[message.topicPartition] = max(done[message.topicPartition] ?? 0, message.offset + 1)
            }
            processor.leases.processed(upTo: done)
            do {
                // Postgres holds the authoritative offsets; the group's copy is for lag monitoring.
                try consumer.commit(done)
            } catch {
                logger.debug("could not commit offsets to the group", metadata: ["error": "\(error)"])
            }
        }
    }

    private func record(_ outcome: FixBatchProcessor.Outcome) {
        if outcome.evaluated > 0 { fixesCounter.increment(by: outcome.evaluated) }
        if outcome.late > 0 { lateCounter.increment(by: outcome.late) }
        if outcome.duplicate > 0 { duplicateCounter.increment(by: outcome.duplicate) }
        if outcome.erased > 0 { erasedCounter.increment(by: outcome.erased) }
        if outcome.invalid > 0 {
            invalidCounter.increment(by: outcome.invalid)
            metrics.invalidFixDeadLetters.increment(by: outcome.invalid)
        }
        if outcome.checkIns > 0 { checkInCounter.increment(by: outcome.checkIns) }
        if outcome.checkOuts > 0 { checkOutCounter.increment(by: outcome.checkOuts) }
        for (tally, count) in outcome.entries {
            metrics.decisions(outcome: tally.outcome, reason: tally.reason).increment(by: count)
        }
    }
}

/// Lets a partition revocation wait for the batch in flight, so that the worker
/// that takes the partition over starts from offsets that include it.
actor BatchGate {
    private var inFlight = false
    private var waiters: [Int: CheckedContinuation<Bool, Never>] = [:]
    private var nextWaiter = 0

    func enter() {
        inFlight = true
    }

    func leave() {
        inFlight = false
        let resumed = waiters.values
        waiters.removeAll()
        for waiter in resumed { waiter.resume(returning: true) }
    }

    /// True once no batch is in flight; false when one still is after `limit`.
    func waitUntilIdle(atMost limit: Duration) async -> Bool {
        guard inFlight else { return true }
        let waiter = nextWaiter
        nextWaiter += 1
        Task { [weak self] in
            try? await Task.sleep(for: limit)
            await self?.giveUp(waiter)
        }
        return await withCheckedContinuation { waiters[waiter] = $0 }
    }

    private func giveUp(_ waiter: Int) {
        waiters.removeValue(forKey: waiter)?.resume(returning: false)
    }
}

/// Takes newly assigned partitions under a new epoch and starts them at the offsets
/// recorded in Postgres with the state they produced; on revocation lets go of them
/// first (a batch retrying against an unreachable database drops their records),
/// then waits for the batch in flight.
struct EvaluatorRebalanceListener: KafkaRebalanceListener {
    let group: String
    let owner: String
    let ownership: PartitionOwnershipStore
    let leases: PartitionLeases
    let gate: BatchGate
    /// How long a revocation waits for the batch in flight; well below the poll interval.
    let revokeWait: Duration
    let logger: Logger

    func partitionsAssigned(_ partitions: [KafkaTopicPartition]) async throws -> [KafkaTopicPartition: Int64] {
        var epochs: [KafkaTopicPartition: Int64] = [:]
        var result: [KafkaTopicPartition: Int64] = [:]
        for (topic, group) in Dictionary(grouping: partitions, by: \.topic) {
            let taken = try await acquire(topic: topic, partitions: group.map(\.partition))
            for partition in group {
                if let epoch = taken.epochs[partition.partition] { epochs[partition] = epoch }
                if let offset = taken.nextOffsets[partition.partition] { result[partition] = offset }
            }
        }
        leases.granted(epochs, nextOffsets: result)
        logger.info(
            "partitions assigned",
            metadata: [
                "partitions": "\(partitions.map(\.partition).sorted())", "seek": "\(result.count)",
                "epochs": "\(epochs.values.sorted())",
            ])
        return result
    }

    /// Retries while the database is away: failing here would stop the consumer.
    private func acquire(topic: String, partitions: [Int32]) async throws
        -> (epochs: [Int32: Int64], nextOffsets: [Int32: Int64])
    {
        var retry = 0
        while true {
            do {
                return try await ownership.acquire(group: group, topic: topic, partitions: partitions, owner: owner)
            } catch {
                retry += 1
                if retry >= 10 || Task.isCancelled { throw error }
                logger.warning("could not take partitions; retrying", metadata: ["error": "\(String(reflecting: error))"])
                try await Task.sleep(for: Backoff().delay(beforeRetry: retry))
            }
        }
    }

    func partitionsRevoked(_ partitions: [KafkaTopicPartition]) async {
        leases.released(partitions)
        // The group waits for this call. A batch that cannot commit now (Postgres away)
        // is not waited for long: the epochs keep it from landing over the next owner's work.
        let idle = await gate.waitUntilIdle(atMost: revokeWait)
        logger.info(
            "partitions revoked",
            metadata: ["partitions": "\(partitions.map(\.partition).sorted())", "batchInFlight": "\(!idle)"])
    }
}
