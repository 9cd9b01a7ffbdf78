import BatchProcessing
import Foundation
import Geofence
import Kafka
import Logging
import Persistence
import ServiceLifecycle
import ServiceSupport

/// The evaluator's services, in start order. A `ServiceGroup` stops them in reverse:
/// the processing loop first (it finishes or abandons the batch in flight), then the
/// consumer leaves the group, and the producer and the database go after them.
package struct Evaluator: Sendable {
    package let catalog: ZoneCatalog
    package let sweeper: StaleCheckOutSweeper
    /// Publishes decided events once their states committed.
    let relay: EventRelay
    /// Writes decision records once their batches committed.
    let recorder: DecisionRecorder
    package let service: EvaluatorService
    package let consumer: KafkaConsumer
    let consumerAfterZones: ConsumerAfterZonesLoaded
    let watchdog: PartitionStallWatchdog
    /// Hands the partitions over while this worker cannot reach Postgres; nil when disabled.
    let cutOffMonitor: DatabaseCutOffMonitor?
    /// Moves the worker to the group's next incarnation when its coordinator wedged it; nil when disabled.
    let groupRecovery: GroupRecovery?
    package let lagMonitor: EvaluatorLagMonitor
    /// Deletes the states of devices gone silent; nil when they are kept for ever.
    package let retention: RetentionService?
    /// Deletes decision records past their retention, each device's newest kept.
    package let decisionRetention: RetentionService
    /// Deletes events of the event log past its retention.
    package let eventLogRetention: RetentionService
    /// Forgets erasures (and their erased event ids) once the topics no longer hold what they erased.
    package let erasureRetention: RetentionService
    package let metrics = EvaluatorMetrics()

    package init(
        configuration: EvaluatorConfiguration, consumerConfiguration: KafkaConsumerConfiguration, database: Database,
        producer: KafkaProducer, readiness: Readiness? = nil, logger: Logger,
        onZonesLoaded: @escaping @Sendable () -> Void = {}
    ) throws {
        var consumerConfiguration = consumerConfiguration
        consumerConfiguration.groupId = configuration.groupId
        consumerConfiguration.topics = [configuration.topics.fixes]
        consumerConfiguration.maxBatchSize = configuration.maximumBatchSize
        let catalog = ZoneCatalog(
            zones: ZoneStore(database: database, logger: logger), configuration: configuration.engine,
            refreshInterval: configuration.zoneRefreshInterval, loadTimeout: configuration.zoneLoadTimeout,
            logger: logger, onFirstLoad: onZonesLoaded, metrics: metrics)
        let gate = BatchGate()
        let leases = PartitionLeases()
        let listener = EvaluatorRebalanceListener(
            group: configuration.groupId, owner: Self.ownerName(),
            ownership: PartitionOwnershipStore(database: database, logger: logger), leases: leases, gate: gate,
            revokeWait: min((consumerConfiguration.maxPollInterval ?? .seconds(300)) / 3, .seconds(10)), logger: logger)
        let consumer = try KafkaConsumer(configuration: consumerConfiguration, rebalanceListener: listener, logger: logger)
        let processor = FixBatchProcessor(
            configuration: configuration, database: database, producer: producer, catalog: catalog, leases: leases,
            logger: logger)
        self.catalog = catalog
        self.relay = processor.relay
        self.recorder = processor.recorder
        self.consumer = consumer
        self.consumerAfterZones = ConsumerAfterZonesLoaded(catalog: catalog, consumer: consumer, logger: logger)
        let health = ProcessingHealth(service: "evaluator", readiness: readiness)
        self.service = EvaluatorService(
            consumer: consumer, processor: processor, gate: gate, health: health,
            attemptTimeout: configuration.batchTimeout, logger: logger)
        self.cutOffMonitor =
            configuration.leaveGroupAfterDatabaseLoss > .zero
            ? DatabaseCutOffMonitor(
                consumer: consumer, health: health, readiness: readiness,
                leaveAfter: configuration.leaveGroupAfterDatabaseLoss, logger: logger,
                databaseAnswers: { await database.isReachable(within: .seconds(2)) })
            : nil
        self.groupRecovery =
            configuration.rebalanceLimit > .zero
            ? GroupRecovery(
                service: "evaluator", consumer: consumer, group: configuration.groupId,
                groups: ConsumerGroupStore(database: database, logger: logger), stuckAfter: configuration.rebalanceLimit,
                readiness: readiness, logger: logger)
            : nil
        self.lagMonitor = EvaluatorLagMonitor(
            bootstrapServers: consumerConfiguration.bootstrapServers, properties: consumerConfiguration.properties,
            offsets: OffsetStore(database: database, logger: logger), group: configuration.groupId,
            topic: configuration.topics.fixes, logger: logger)
        self.sweeper = StaleCheckOutSweeper(
            interval: configuration.staleSweepInterval, processor: processor, consumer: consumer, logger: logger)
        let purge = DeviceStatePurge(database: database, retention: configuration.deviceStateRetention, logger: logger)
        self.retention =
            configuration.deviceStateRetention > .zero
            ? RetentionService(
                name: "device states", metric: "checkin_evaluator_device_states_purged_total", logger: logger,
                purge: { now in try await purge.purge(now: now) })
            : nil
        let decisions = DecisionStore(logger: logger)
        let keepFor = configuration.decisionRetention
        self.decisionRetention = RetentionService(
            name: "decision records", metric: "checkin_evaluator_decision_records_purged_total", logger: logger,
            purge: { now in
                try await decisions.purge(
                    olderThan: keepFor, keep: DecisionStore.keptPerDevice, now: now, on: database.client)
            })
        let eventLog = EventLogStore(database: database, logger: logger)
        let eventsFor = configuration.eventLogRetention
        self.eventLogRetention = RetentionService(
            name: "event log", metric: "checkin_evaluator_event_log_purged_total", logger: logger,
            purge: { now in try await eventLog.purge(olderThan: eventsFor, now: now) })
        let erasures = ErasureStore(database: database, logger: logger)
        self.erasureRetention = RetentionService(
            name: "erasures", metric: "checkin_evaluator_erasures_purged_total", logger: logger,
            purge: { now in try await erasures.purge(before: now - Double(ErasureStore.retention.components.seconds)) })
        self.watchdog = PartitionStallWatchdog(
            consumer: consumer, leases: leases, readiness: readiness,
            stallAfter: consumerConfiguration.maxPollInterval ?? .seconds(300), logger: logger)
    }

    package var services: [any Service] {
        [
            catalog, relay, recorder, consumerAfterZones, sweeper, service, watchdog, lagMonitor, decisionRetention,
            eventLogRetention, erasureRetention,
        ]
            + (retention.map { [$0] } ?? [])
            + (cutOffMonitor.map { [$0] } ?? []) + (groupRecovery.map { [$0] } ?? [])
    }

    /// Names this process in `partition_epochs`, for operators reading who holds what.
    static func ownerName() -> String {
        "\(ProcessInfo.processInfo.hostName):\(ProcessInfo.processInfo.processIdentifier):\(UUID().uuidString.prefix(8))"
    }
}

/// Joins the group only once the zones are loaded: a worker that cannot evaluate
/// must not hold partitions (it is not ready, and the others keep them).
struct ConsumerAfterZonesLoaded: Service {
    let catalog: ZoneCatalog
    let consumer: KafkaConsumer
    let logger: Logger

    func run() async throws {
        guard await catalog.waitUntilLoaded() else { return }
        logger.info("zones loaded; joining the consumer group")
        try await consumer.run()
    }
}
