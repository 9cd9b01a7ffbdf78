import BatchProcessing
import Foundation
import Kafka
import Logging
import Persistence
import ServiceLifecycle
import ServiceSupport
import Synchronization

/// Exports, every `interval`, what the notifier has not done yet:
/// - `checkin_notifier_consumer_lag_records{topic,partition}`: event records not yet
///   turned into deliveries, from the offsets the notifiers commit to the group they are
///   in now (its incarnation read from Postgres each time)
///   against the broker's end offsets;
/// - `checkin_notifier_delivery_backlog{project,endpoint,state}`: deliveries
///   `pending` (not attempted yet), `retrying` and `failed` (out of attempts);
/// - `checkin_notifier_endpoint_enabled{project,endpoint}`: 1, or 0 once disabled.
/// Every notifier reports the same figures, so dashboards take the max.
///
/// The backlog is counted from every undelivered delivery, which under a partner's backlog
/// of a million takes seconds of a Postgres process: it is read again only once
/// `backlogReadingSpacing` times what its last reading took has passed (every 33 s when it
/// took 1.65 s), so that counting a backlog never takes more than a twentieth of a process.
package final class NotifierMonitor: Service, Sendable {
    /// How many times its last reading's duration passes, at least, between two readings of
    /// the delivery backlog.
    static let backlogReadingSpacing = 20

    let bootstrapServers: String
    let properties: [String: String]
    let group: String
    let topics: [String]
    let operations: OperationsStore
    let interval: Duration
    let logger: Logger
    let lag = GaugeFamily(name: "checkin_notifier_consumer_lag_records")
    let backlog = GaugeFamily(name: "checkin_notifier_delivery_backlog")
    let endpointEnabled = GaugeFamily(name: "checkin_notifier_endpoint_enabled")

    /// Where the group's incarnation is kept: after a recovery the notifiers commit as
    /// `<group>~<n>`, and the lag is that group's, not the one they left.
    let groups: ConsumerGroupStore

    package init(
        bootstrapServers: String, properties: [String: String] = [:], group: String, topics: [String],
        operations: OperationsStore, groups: ConsumerGroupStore, interval: Duration = .seconds(10), logger: Logger
    ) {
        self.bootstrapServers = bootstrapServers
        self.properties = properties
        self.group = group
        self.topics = topics
        self.operations = operations
        self.groups = groups
        self.interval = interval
        self.logger = logger
    }

    package func run() async throws {
        let readers = OffsetReaders(bootstrapServers: bootstrapServers, properties: properties, logger: logger)
        var failing: Set<String> = []
        func attempt(_ what: String, _ body: @escaping @Sendable () async throws -> Void) async {
            do {
                // A reading waiting on an unreachable database must not hold up a shutdown.
                try await cancelWhenGracefulShutdown { try await body() }
                failing.remove(what)
            } catch {
                if failing.insert(what).inserted {
                    logger.warning("could not measure \(what)", metadata: ["error": "\(error)"])
                }
            }
        }
        let clock = ContinuousClock()
        var nextBacklogReading = clock.now
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            await attempt("the events' lag") { [self] in
                let current = GroupRecovery.groupId(group, incarnation: try await groups.incarnation(of: group))
                let reader = try readers.reader(for: current)
                var samples: [GaugeFamily.Sample] = []
                for topic in topics {
                    let partitions = try await reader.lag(topic: topic) { try await reader.committedOffsets(topic: topic, partitions: $0) }
                    samples += partitions.map {
                        .init(labels: [("topic", topic), ("partition", String($0.partition.partition))], value: Double($0.records))
                    }
                }
                lag.update(samples)
            }
            if clock.now >= nextBacklogReading {
                let started = clock.now
                await readBacklog(attempt)
                nextBacklogReading = started + max(interval, (clock.now - started) * Self.backlogReadingSpacing)
            }
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: self.interval) }
        }
    }

    /// The delivery backlog and which endpoints are enabled, as gauges.
    private func readBacklog(_ attempt: (String, @escaping @Sendable () async throws -> Void) async -> Void) async {
        await attempt("the delivery backlog") { [self] in
            let endpoints = try await operations.deliveryBacklog()
            backlog.update(
                endpoints.flatMap { endpoint in
                    [("pending", endpoint.pending), ("retrying", endpoint.retrying), ("failed", endpoint.failed)].map {
                        .init(
                            labels: [("project", endpoint.projectId), ("endpoint", endpoint.endpointId), ("state", $0.0)],
                            value: Double($0.1))
                    }
                })
            endpointEnabled.update(
                endpoints.map {
                    .init(labels: [("project", $0.projectId), ("endpoint", $0.endpointId)], value: $0.enabled ? 1 : 0)
                })
        }
    }
}

/// One offset reader for the group the notifiers are in now, made again when it changes.
private final class OffsetReaders: Sendable {
    let bootstrapServers: String
    let properties: [String: String]
    let logger: Logger
    private let current = Mutex<(group: String, reader: KafkaOffsetReader)?>(nil)

    init(bootstrapServers: String, properties: [String: String], logger: Logger) {
        self.bootstrapServers = bootstrapServers
        self.properties = properties
        self.logger = logger
    }

    func reader(for group: String) throws -> KafkaOffsetReader {
        try current.withLock { current in
            if let current, current.group == group { return current.reader }
            let reader = try KafkaOffsetReader(bootstrapServers: bootstrapServers, group: group, properties: properties, logger: logger)
            current = (group, reader)
            return reader
        }
    }
}
