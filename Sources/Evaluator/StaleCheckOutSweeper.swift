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
/// wall-clock decision in the pipeline. Rows are claimed with SKIP LOCKED, so
/// several evaluators sweep side by side without doing the same device twice.
public final class StaleCheckOutSweeper: Service, Sendable {
    let interval: Duration
    let processor: FixBatchProcessor
    let logger: Logger
    let batchSize = 200
    let timeouts = Counter(label: "checkin_evaluator_events_total", dimensions: [("type", "checkout-timeout")])

    init(interval: Duration, processor: FixBatchProcessor, logger: Logger) {
        self.interval = interval
        self.processor = processor
        self.logger = logger
    }

    public func run() async throws {
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

    /// Checks out what is due at `now`; returns how many devices it looked at.
    @discardableResult
    public func sweep(now: Date) async throws -> Int {
        let engine = try await processor.catalog.engine()
        let decoder = WireJSON.decoder()
        let encoder = WireJSON.encoder()
        let (claimed, events) = try await processor.database.withTransaction { connection in
            let due = try await processor.states.claimStale(dueBy: now, limit: batchSize, on: connection)
            var records: [KafkaRecord] = []
            var updated: [StoredDeviceState] = []
            for stored in due {
                var state = processor.decodeState(stored.stateJSON, key: stored.key, decoder: decoder)
                let events = engine.checkOutStale(
                    state: &state, projectId: stored.key.projectId, deviceId: stored.key.deviceId, now: now)
                records.append(contentsOf: try events.map { try processor.record(for: $0, encoder: encoder) })
                var next = stored
                next.stateJSON = String(decoding: try encoder.encode(state), as: UTF8.self)
                next.staleAt = engine.staleDeadline(of: state)
                if next.staleAt.map({ $0 <= now }) == true {
                    // Nothing more to do now; look again after one more interval rather than spin.
                    next.staleAt = now.addingTimeInterval(engine.configuration.staleAfter)
                }
                updated.append(next)
            }
            try await processor.producer.sendAll(records)
            try await processor.states.save(updated, on: connection)
            return (due.count, records.count)
        }
        if events > 0 {
            timeouts.increment(by: events)
            logger.info("stale check-outs", metadata: ["devices": "\(claimed)", "events": "\(events)"])
        }
        return claimed
    }
}
