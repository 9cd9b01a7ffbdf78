import Geofence
import Kafka
import Logging
import Persistence
import ServiceLifecycle

/// The evaluator's services, in start order. A `ServiceGroup` stops them in reverse:
/// the processing loop first (it finishes the batch in flight), then the consumer
/// leaves the group, and the producer and the database go after them.
public struct Evaluator: Sendable {
    public let catalog: ZoneCatalog
    public let sweeper: StaleCheckOutSweeper
    public let service: EvaluatorService
    public let consumer: KafkaConsumer
    public let lagMonitor: EvaluatorLagMonitor
    public let metrics = EvaluatorMetrics()

    public init(
        configuration: EvaluatorConfiguration, consumerConfiguration: KafkaConsumerConfiguration, database: Database,
        producer: KafkaProducer, logger: Logger, onZonesLoaded: @escaping @Sendable () -> Void = {}
    ) throws {
        var consumerConfiguration = consumerConfiguration
        consumerConfiguration.groupId = configuration.groupId
        consumerConfiguration.topics = [configuration.topics.fixes]
        consumerConfiguration.maxBatchSize = configuration.maximumBatchSize
        let catalog = ZoneCatalog(
            zones: ZoneStore(database: database, logger: logger), configuration: configuration.engine,
            refreshInterval: configuration.zoneRefreshInterval, logger: logger, onFirstLoad: onZonesLoaded,
            metrics: metrics)
        let gate = BatchGate()
        let listener = EvaluatorRebalanceListener(
            group: configuration.groupId, offsets: OffsetStore(database: database, logger: logger), gate: gate,
            logger: logger)
        let consumer = try KafkaConsumer(configuration: consumerConfiguration, rebalanceListener: listener, logger: logger)
        let processor = FixBatchProcessor(
            configuration: configuration, database: database, producer: producer, catalog: catalog, logger: logger)
        self.catalog = catalog
        self.consumer = consumer
        self.service = EvaluatorService(consumer: consumer, processor: processor, gate: gate, logger: logger)
        self.lagMonitor = EvaluatorLagMonitor(
            bootstrapServers: consumerConfiguration.bootstrapServers, properties: consumerConfiguration.properties,
            offsets: OffsetStore(database: database, logger: logger), group: configuration.groupId,
            topic: configuration.topics.fixes, logger: logger)
        self.sweeper = StaleCheckOutSweeper(interval: configuration.staleSweepInterval, processor: processor, logger: logger)
    }

    public var services: [any Service] { [catalog, consumer, sweeper, service, lagMonitor] }
}
