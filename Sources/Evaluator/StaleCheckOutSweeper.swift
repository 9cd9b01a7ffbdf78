import Foundation
import Geofence
import Kafka
import Logging
import Metrics
import Persistence
import ServiceLifecycle
import Shared

/// Checks out devices that went silent while checked in: apps force-quit by the
/// user are not relaunched by iOS, so their exit fix never comes. The only
/// wall-clock decision in the pipeline, and it is taken against the stream: a
/// device is silent only if its partition of the fixes topic has been consumed
/// past its deadline (`consumer_offsets.consumed_until`), because after an outage
/// or in a backlog its next fixes may still be waiting there. A partition with
/// nothing waiting is consumed up to now, so an idle device still times out by the
/// clock. Both are taken less the producers' allowed clock skew
/// (``EvaluatorConfiguration/maximumProducerSkew``): records are stamped by their
/// producers' clocks, and a device whose producer's clock is behind must not look silent.
///
/// Each worker judges only the devices of the partitions it holds, under their
/// epochs (checked before the commit, and held until it), so a worker that lost a
/// partition never times out its devices; the check-outs go to the outbox with the
/// states and are published once committed. Rows are claimed with SKIP LOCKED, so a
/// sweep and a batch never wait on each other.
package final class StaleCheckOutSweeper: Service, Sendable {
    let interval: Duration
    let processor: FixBatchProcessor
    let consumer: KafkaConsumer
    let logger: Logger
    let batchSize = 200
    /// Check-outs of devices silent past their stale time: events of type `checkout` like the
    /// others, told apart by who decided them.
    let timeouts = Counter(label: "checkin_evaluator_events_total", dimensions: [("type", "checkout"), ("decided_by", "stale-sweep")])

    init(interval: Duration, processor: FixBatchProcessor, consumer: KafkaConsumer, logger: Logger) {
        self.interval = interval
        self.processor = processor
        self.consumer = consumer
        self.logger = logger
    }

    package func run() async throws {
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            do {
                // A sweep waiting on an unreachable database must not hold up a shutdown.
                try await cancelWhenGracefulShutdown {
                    while try await self.sweep(now: Date()) == self.batchSize {}
                }
            } catch {
                logger.error("stale check-out sweep failed", metadata: ["error": "\(String(reflecting: error))"])
            }
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: self.interval) }
        }
    }

    /// Checks out what is due at `now` on the partitions this worker holds; returns how
    /// many devices it looked at.
    @discardableResult
    package func sweep(now: Date) async throws -> Int {
        let topic = processor.configuration.topics.fixes
        let held = processor.leases.snapshot.filter { $0.key.topic == topic }
        guard !held.isEmpty else { return 0 }
        // Records a producer stamped just before the question may still be on their way, and
        // a producer whose clock is behind this worker's stamps its records earlier still.
        let askedAt = processor.consumedUntil(stampedAt: Date().addingTimeInterval(-Self.inFlightMargin))
        let idle = await caughtUp(held)
        do {
            try await markConsumed(idle, until: min(now, askedAt))
            return try await checkOutDue(on: Array(held.keys), now: now)
        } catch let lost as PartitionOwnershipLost {
            // Let go, for the epochs the sweep held, where the ownership check failed.
            logger.info("partitions moved to another worker; their devices are its to judge", metadata: ["error": "\(lost)"])
            return 0
        }
    }

    /// How long before the broker is asked a record may have been stamped and not be stored yet.
    static let inFlightMargin: TimeInterval = 1

    /// The held partitions where nothing waits beyond what was processed and committed:
    /// the broker's high watermark, asked now, is reached. The watermark of the last fetch
    /// would not do: fetching pauses while the worker is busy, and records keep arriving.
    /// A partition whose end the broker does not give (in time) is not caught up; the others
    /// still count, so that one slow answer does not hold up every partition's check-outs.
    func caughtUp(_ held: [KafkaTopicPartition: PartitionLeases.Lease]) async -> [KafkaTopicPartition] {
        var caughtUp: [KafkaTopicPartition] = []
        for (partition, lease) in held {
            do {
                guard let end = try await consumer.highWatermarks(of: [partition])[partition] else { continue }
                if end <= lease.nextOffset ?? 0 { caughtUp.append(partition) }
            } catch {
                logger.notice(
                    "could not read a partition's end offset; it does not count as caught up",
                    metadata: ["partition": "\(partition)", "error": "\(error)"])
            }
        }
        return caughtUp
    }

    /// Records that these held partitions are consumed up to `now`.
    private func markConsumed(_ partitions: [KafkaTopicPartition], until now: Date) async throws {
        guard !partitions.isEmpty else { return }
        let epochs = try processor.leases.epochs(covering: partitions)
        let (group, topic) = (processor.configuration.groupId, processor.configuration.topics.fixes)
        try await releasingLost(epochs) {
            try await processor.database.withTransaction { connection in
                try await processor.ownership.verify(group: group, epochs: epochs, on: connection)
                try await processor.offsets.markConsumed(
                    group: group, topic: topic, partitions: partitions.map(\.partition), until: now, on: connection)
            }
        }
    }

    /// Runs `work` done under `epochs`; should it find a partition taken by another worker,
    /// lets go of that partition for these epochs only (see ``PartitionLeases``).
    private func releasingLost<T>(_ epochs: [OwnedPartition: Int64], _ work: () async throws -> T) async throws -> T {
        do {
            return try await work()
        } catch let lost as PartitionOwnershipLost {
            processor.leases.released(lost, heldUnder: epochs)
            throw lost
        }
    }

    private func checkOutDue(on partitions: [KafkaTopicPartition], now: Date) async throws -> Int {
        let epochs = try processor.leases.epochs(covering: partitions)
        return try await releasingLost(epochs) { try await checkOutDue(on: partitions, now: now, under: epochs) }
    }

    private func checkOutDue(
        on partitions: [KafkaTopicPartition], now: Date, under epochs: [OwnedPartition: Int64]
    ) async throws -> Int {
        let (group, topic) = (processor.configuration.groupId, processor.configuration.topics.fixes)
        let engines = try await processor.catalog.engines()
        let (claimed, events) = try await processor.database.withTransaction { connection in
            let due = try await processor.states.claimStale(
                dueBy: now, group: group, topic: topic, partitions: partitions.map(\.partition), limit: batchSize,
                on: connection)
            guard !due.isEmpty else { return (0, 0) }
            var decided: [OutboxEvent] = []
            var updated: [StoredDeviceState] = []
            for stored in due {
                var state = processor.decodeState(stored.state, key: stored.key)
                let engine = engines.engine(for: stored.key.projectId)
                let events = engine.checkOutStale(
                    state: &state, projectId: stored.key.projectId, deviceId: stored.key.deviceId, now: now)
                decided += try events.map {
                    try processor.outboxEvent(for: $0, from: stored.partition ?? -1)
                }
                var next = stored
                next.state = state.binaryEncoded()
                next.staleAt = engine.staleDeadline(of: state)
                if next.staleAt.map({ $0 <= now }) == true {
                    // Nothing more to do now; look again after one more interval rather than spin.
                    next.staleAt = now.addingTimeInterval(engines.configuration.staleAfter)
                }
                updated.append(next)
            }
            try await processor.outbox.add(decided, group: group, sourceTopic: topic, on: connection)
            try await processor.states.save(updated, on: connection)
            // Last, as a batch does: nothing commits unless these partitions are still this
            // worker's, and no new owner can take them until the commit.
            try await processor.ownership.verify(group: group, epochs: epochs, on: connection)
            return (due.count, decided.count)
        }
        if events > 0 {
            processor.publishDecidedEvents()
            timeouts.increment(by: events)
            logger.info("stale check-outs", metadata: ["devices": "\(claimed)", "events": "\(events)"])
        }
        return claimed
    }
}
