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
/// A batch that fails (database or broker away) is retried until it succeeds; it
/// is never skipped, because skipping would lose check-ins.
public final class EvaluatorService: Service, Sendable {
    let consumer: KafkaConsumer
    let processor: FixBatchProcessor
    let gate: BatchGate
    let logger: Logger

    let fixesCounter = Counter(label: "checkin_evaluator_fixes_total", dimensions: [("outcome", "evaluated")])
    let lateCounter = Counter(label: "checkin_evaluator_fixes_total", dimensions: [("outcome", "late")])
    let duplicateCounter = Counter(label: "checkin_evaluator_fixes_total", dimensions: [("outcome", "duplicate")])
    let invalidCounter = Counter(label: "checkin_evaluator_fixes_total", dimensions: [("outcome", "invalid")])
    let checkInCounter = Counter(label: "checkin_evaluator_events_total", dimensions: [("type", "checkin")])
    let checkOutCounter = Counter(label: "checkin_evaluator_events_total", dimensions: [("type", "checkout")])
    let batchTimer = Metrics.Timer(label: "checkin_evaluator_batch_seconds")
    let retryCounter = Counter(label: "checkin_evaluator_batch_retries_total")
    let metrics = EvaluatorMetrics()

    init(consumer: KafkaConsumer, processor: FixBatchProcessor, gate: BatchGate, logger: Logger) {
        self.consumer = consumer
        self.processor = processor
        self.gate = gate
        self.logger = logger
    }

    public func run() async throws {
        for try await batch in consumer.batches.cancelOnGracefulShutdown() {
            await gate.enter()
            let outcome = await processUntilDone(batch)
            await gate.leave()
            guard let outcome else { return }
            record(outcome)
            do {
                // Postgres holds the authoritative offsets; the group's copy is for lag monitoring.
                try await consumer.commit(outcome.nextOffsets)
            } catch {
                logger.debug("could not commit offsets to the group", metadata: ["error": "\(error)"])
            }
        }
    }

    /// Nil when the process is stopping before the batch could be processed; it will
    /// be read again from the last committed offsets.
    private func processUntilDone(_ batch: [KafkaConsumerMessage]) async -> FixBatchProcessor.Outcome? {
        var delay = Duration.milliseconds(200)
        while true {
            let started = DispatchTime.now()
            do {
                let outcome = try await processor.process(batch)
                batchTimer.recordInterval(since: started)
                return outcome
            } catch {
                retryCounter.increment()
                logger.error(
                    "batch failed; retrying",
                    metadata: [
                        "error": "\(String(reflecting: error))", "messages": "\(batch.count)",
                        "partition": "\(batch.first?.partition ?? -1)", "offset": "\(batch.first?.offset ?? -1)",
                    ])
                if Task.isCancelled { return nil }
                do {
                    try await Task.sleep(for: delay)
                } catch {
                    return nil
                }
                delay = min(delay * 2, .seconds(5))
            }
        }
    }

    private func record(_ outcome: FixBatchProcessor.Outcome) {
        if outcome.evaluated > 0 { fixesCounter.increment(by: outcome.evaluated) }
        if outcome.late > 0 { lateCounter.increment(by: outcome.late) }
        if outcome.duplicate > 0 { duplicateCounter.increment(by: outcome.duplicate) }
        if outcome.invalid > 0 { invalidCounter.increment(by: outcome.invalid) }
        if outcome.invalid > 0 { metrics.invalidFixDeadLetters.increment(by: outcome.invalid) }
        if outcome.checkIns > 0 { checkInCounter.increment(by: outcome.checkIns) }
        if outcome.checkOuts > 0 { checkOutCounter.increment(by: outcome.checkOuts) }
    }
}

/// Lets a partition revocation wait for the batch in flight, so that the worker
/// that takes the partition over starts from offsets that include it.
actor BatchGate {
    private var inFlight = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    func enter() {
        inFlight = true
    }

    func leave() {
        inFlight = false
        let resumed = waiters
        waiters.removeAll()
        for waiter in resumed { waiter.resume() }
    }

    func waitUntilIdle() async {
        guard inFlight else { return }
        await withCheckedContinuation { waiters.append($0) }
    }
}

/// Starts newly assigned partitions at the offsets recorded in Postgres with the
/// state they produced, and lets revocations wait for the batch in flight.
struct EvaluatorRebalanceListener: KafkaRebalanceListener {
    let group: String
    let offsets: OffsetStore
    let gate: BatchGate
    let logger: Logger

    func partitionsAssigned(_ partitions: [KafkaTopicPartition]) async throws -> [KafkaTopicPartition: Int64] {
        var result: [KafkaTopicPartition: Int64] = [:]
        for (topic, group) in Dictionary(grouping: partitions, by: \.topic) {
            let stored = try await offsets.nextOffsets(group: self.group, topic: topic, partitions: group.map(\.partition))
            for partition in group {
                if let offset = stored[partition.partition] { result[partition] = offset }
            }
        }
        logger.info("partitions assigned", metadata: ["partitions": "\(partitions.map(\.partition).sorted())", "seek": "\(result.count)"])
        return result
    }

    func partitionsRevoked(_ partitions: [KafkaTopicPartition]) async {
        await gate.waitUntilIdle()
        logger.info("partitions revoked", metadata: ["partitions": "\(partitions.map(\.partition).sorted())"])
    }
}
