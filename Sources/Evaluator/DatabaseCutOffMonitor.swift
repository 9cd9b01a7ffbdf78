import BatchProcessing
import Kafka
import Logging
import Metrics
import ServiceLifecycle
import ServiceSupport

/// Hands this worker's partitions to its peers while it cannot reach Postgres, and takes
/// its share back once it can.
///
/// A worker whose batches fail because its own path to the database is broken would
/// otherwise hold its partitions for as long as the cut lasts, retrying (and showing signs
/// of life), while a peer that reaches the database idles. So when attempts fail on the
/// database and the database has not answered a probe for `leaveAfter`, the worker leaves
/// the consumer group (the revocation drops the batch in flight; nothing uncommitted is
/// lost, the next owner reads it from the committed offsets). Out of the group it probes
/// every second and rejoins at the first answer. When Postgres is down for everyone, every
/// worker leaves and all rejoin when it is back: one rebalance more, nothing lost.
final class DatabaseCutOffMonitor: Service, Sendable {
    let consumer: KafkaConsumer
    let health: ProcessingHealth
    let readiness: Readiness?
    /// Whether Postgres answers a trivial query in time.
    let databaseAnswers: @Sendable () async -> Bool
    let leaveAfter: Duration
    let logger: Logger

    let outOfGroup = Gauge(label: "checkin_evaluator_out_of_group")
    let departures = Counter(label: "checkin_evaluator_group_departures_total", dimensions: [("reason", "database")])

    /// Readiness component while the worker is out of the group.
    static let component = "group"

    init(
        consumer: KafkaConsumer, health: ProcessingHealth, readiness: Readiness?, leaveAfter: Duration,
        logger: Logger, databaseAnswers: @escaping @Sendable () async -> Bool
    ) {
        self.consumer = consumer
        self.health = health
        self.readiness = readiness
        self.leaveAfter = leaveAfter
        self.logger = logger
        self.databaseAnswers = databaseAnswers
        outOfGroup.record(0)
        departures.increment(by: 0)
    }

    func run() async throws {
        var unreachableSince: ContinuousClock.Instant?
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            do {
                try await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(1)) }
            } catch {
                return
            }
            if !consumer.isInGroup {
                guard await databaseAnswers() else { continue }
                logger.info("Postgres answers again; joining the consumer group")
                health.recovered(component: "database")
                consumer.rejoinGroup()
                outOfGroup.record(0)
                readiness?.set(Self.component, ready: true)
                unreachableSince = nil
                continue
            }
            // Only a worker whose own attempts fail on the database has anything to hand over.
            guard health.failingComponents.contains("database"), !(await databaseAnswers()) else {
                unreachableSince = nil
                continue
            }
            let since = unreachableSince ?? .now
            unreachableSince = since
            guard ContinuousClock.now - since >= leaveAfter else { continue }
            logger.error(
                "Postgres has not answered this worker; leaving the consumer group so that its peers take the partitions",
                metadata: ["for": "\(ContinuousClock.now - since)"])
            departures.increment()
            outOfGroup.record(1)
            readiness?.set(Self.component, ready: false)
            consumer.leaveGroup()
        }
    }
}
