import Hummingbird
import HummingbirdTesting
import Ingest
import Kafka
import KafkaTesting
import Persistence
import ServiceSupport
import Shared

/// Runs `body` against the Ingest application, in this process, for `harness` (which the
/// caller has prepared), with `configuration` and a database client and producer of its own,
/// served as `target`.
func withIngestApplication(
    _ harness: PipelineHarness, configuration: IngestConfiguration, target: TestingSetup = .router,
    _ body: @Sendable (Database, any TestClientProtocol) async throws -> Void
) async throws {
    let database = Database(configuration: try harness.databaseConfiguration(), logger: harness.logger)
    let producer = try KafkaProducer(
        configuration: KafkaProducerConfiguration(bootstrapServers: TestEnvironment.kafkaBrokers, clientId: "test-ingest"),
        logger: harness.logger)
    let dependencies = IngestDependencies(
        producer: producer, projects: ProjectStore(database: database, logger: harness.logger),
        zones: ZoneStore(database: database, logger: harness.logger),
        webhooks: WebhookStore(database: database, logger: harness.logger, sealer: harness.sealer),
        devices: DeviceRecords(database: database, logger: harness.logger),
        idempotency: IdempotencyStore(database: database, logger: harness.logger, sealer: harness.sealer), readiness: Readiness(),
        registry: MetricsBootstrap.prometheus())
    let app = buildIngestApplication(configuration: configuration, dependencies: dependencies, logger: harness.logger)
    try await withServicesRunning([database, producer]) {
        try await app.test(target) { client in try await body(database, client) }
    }
}
