import AsyncHTTPClient
import Evaluator
import Foundation
import Geofence
import Hummingbird
import Ingest
import Kafka
import Logging
import NIOCore
import NIOHTTP1
import Notifier
import Persistence
import PostgresNIO
import ServiceLifecycle
import ServiceSupport
import Shared

/// The whole pipeline in this process against the real broker and Postgres, on
/// topics, groups and a project of its own so tests do not see each other's data.
struct PipelineHarness {
    let suffix = String(UUID().uuidString.prefix(8)).lowercased()
    var topics: Topics {
        Topics(
            fixes: "test-\(suffix).fixes", fixesDeadLetter: "test-\(suffix).fixes.dlq", checkIns: "test-\(suffix).checkins",
            checkOuts: "test-\(suffix).checkouts", eventsDeadLetter: "test-\(suffix).events.dlq")
    }
    var projectId: String { "project-\(suffix)" }
    var deviceKey: String { "ck_device_test_\(suffix)" }
    var managementKey: String { "ck_management_test_\(suffix)" }
    /// The engine's settings; tests of wall-clock rules shorten them.
    var engine = EngineConfiguration()
    var staleSweepInterval: Duration = .seconds(15)
    /// How far the evaluator lets producers' clocks be apart (its default is 10 s).
    var maximumProducerSkew: Duration = .seconds(10)
    /// What the ingest and the evaluator take of fixes.
    var limits = InputLimits()
    /// The project's zones.
    var zones = TestTrip.zones
    /// Other tenants beside the project (by name), each with the trip's zones, there before
    /// the services start: a tenant added later is seen only after a zones refresh.
    var otherTenants: [String] = []
    func tenantId(_ name: String) -> String { "\(name)-\(suffix)" }
    /// Where the services keep their data; tests whose notifier settings matter use a
    /// database of their own (`freshDatabaseURL`), where no other test's notifier claims.
    var databaseURL = TestEnvironment.databaseURL
    /// How the partner answers (nil: 204 to everything).
    var respond: WebhookReceiver.Responder?
    /// Changes to the in-process notifier's settings.
    var configureNotifier: @Sendable (inout NotifierConfiguration) -> Void = { _ in }
    var evaluatorGroup: String { "evaluator-\(suffix)" }
    var notifierGroup: String { "notifier-\(suffix)" }
    let secret = WebhookSecret.generate()
    /// What the in-process services report on `/ready`.
    let readiness = Readiness()
    /// librdkafka properties of the services' producer (tests of oversized records lower `message.max.bytes`).
    var producerProperties: [String: String] = [:]
    /// Stages that start only once the test releases them (`stages.release`).
    var stages = HeldStages()
    /// Seals the endpoints' secrets in the database, as `CHECKIN_SECRET_KEY` does in production.
    /// One for every harness: a service process started by a test checks at start that it can
    /// open every secret in the database, which all tests share.
    static let sharedSecretKey = SecretEncryptionKey.generate()
    var secretKey: SecretEncryptionKey { Self.sharedSecretKey }
    var sealer: SecretSealer { SecretSealer(key: secretKey) }
    /// The receivers of tests listen on 127.0.0.1 over http; tests of the policy make it strict.
    var webhookURLPolicy = WebhookURLPolicy.local
    var hostResolver: any WebhookHostResolver = SystemHostResolver()
    let logger = Logger.forTests("test.pipeline")

    func databaseConfiguration() throws -> DatabaseConfiguration {
        try DatabaseConfiguration(url: databaseURL)
    }

    /// Creates an empty database next to the shared one and returns its URL.
    static func freshDatabaseURL() async throws -> String {
        var logger = Logger(label: "test.pipeline")
        logger.logLevel = .warning
        return try await IntegrationTests.freshDatabaseURL(logger: logger)
    }

    /// A directory for the logs of the service processes a test starts.
    func makeLogDirectory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("checkin-\(suffix)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    /// What a `checkin` service process started by a test needs: this harness's broker,
    /// database, topics and groups, the local broker's short group timeouts, quick retries,
    /// the shared secret key and local partners over http. Callers add `CHECKIN_HTTP_PORT`.
    var processEnvironment: [String: String] {
        [
            "CHECKIN_KAFKA_BROKERS": TestEnvironment.kafkaBrokers, "CHECKIN_DATABASE_URL": databaseURL,
            "CHECKIN_TOPIC_FIXES": topics.fixes, "CHECKIN_TOPIC_FIXES_DLQ": topics.fixesDeadLetter,
            "CHECKIN_TOPIC_CHECKINS": topics.checkIns, "CHECKIN_TOPIC_CHECKOUTS": topics.checkOuts,
            "CHECKIN_TOPIC_EVENTS_DLQ": topics.eventsDeadLetter,
            "CHECKIN_EVALUATOR_GROUP": evaluatorGroup, "CHECKIN_NOTIFIER_GROUP": notifierGroup,
            "CHECKIN_KAFKA_PARTITIONS": "4", "CHECKIN_KAFKA_SESSION_TIMEOUT_MS": "6000",
            "CHECKIN_KAFKA_HEARTBEAT_INTERVAL_MS": "1000", "CHECKIN_KAFKA_MAX_POLL_INTERVAL_MS": "10000",
            "CHECKIN_ZONE_REFRESH_INTERVAL": "0.5", "CHECKIN_WEBHOOK_RETRY_DELAY": "0.2", "CHECKIN_LOG_LEVEL": "info",
            "CHECKIN_SECRET_KEY": secretKey.base64, "CHECKIN_WEBHOOK_ALLOW_PRIVATE": "true",
            "CHECKIN_WEBHOOK_ALLOW_HTTP": "true",
        ]
    }

    func consumerConfiguration(clientId: String) -> KafkaConsumerConfiguration {
        var configuration = KafkaConsumerConfiguration(
            bootstrapServers: TestEnvironment.kafkaBrokers, groupId: "", clientId: clientId, topics: [])
        configuration.sessionTimeout = .seconds(6)
        configuration.heartbeatInterval = .seconds(1)
        configuration.maxPollInterval = .seconds(10)
        return configuration
    }

    /// Migrates, creates the topics and the project with its key and zones.
    func prepare() async throws {
        let projectId = projectId
        let deviceKey = deviceKey
        let managementKey = managementKey
        let zones = zones
        let tenants = otherTenants.map { (id: tenantId($0), name: $0) }
        try await Database.withTemporaryClient(configuration: try databaseConfiguration(), logger: logger) { database in
            try await Migrator(database: database, logger: logger).migrate()
            let projects = ProjectStore(database: database, logger: logger)
            try await projects.createProject(id: projectId, name: "Test")
            try await projects.addKey(deviceKey, projectId: projectId, kind: .device)
            try await projects.addKey(managementKey, projectId: projectId, kind: .management)
            try await ZoneStore(database: database, logger: logger).replaceZones(projectId: projectId, with: zones)
            for tenant in tenants {
                try await projects.createProject(id: tenant.id, name: tenant.name)
                try await ZoneStore(database: database, logger: logger).replaceZones(projectId: tenant.id, with: TestTrip.zones)
            }
        }
        try await KafkaAdmin.createTopics(
            topics.all.map { (name: $0, partitions: 4) }, bootstrapServers: TestEnvironment.kafkaBrokers, timeout: .seconds(30),
            logger: logger)
    }

    /// Adds an endpoint straight to the store, bypassing the management API's URL checks.
    @discardableResult
    func addEndpoint(url: String) async throws -> WebhookEndpoint {
        let (projectId, secret, sealer) = (projectId, secret, sealer)
        return try await Database.withTemporaryClient(configuration: try databaseConfiguration(), logger: logger) { database in
            try await WebhookStore(database: database, logger: logger, sealer: sealer).addEndpoint(
                projectId: projectId, url: url, secrets: [secret])
        }
    }

    /// Runs ingest, evaluator, notifier and a verifying receiver; `body` gets the ingest port.
    func run(_ body: @Sendable (_ ingestPort: Int, _ received: ReceivedWebhooks) async throws -> Void) async throws {
        try await prepare()
        // Before any service makes its metrics: made earlier, they would go nowhere.
        let registry = MetricsBootstrap.prometheus()
        let database = Database(configuration: try databaseConfiguration(), logger: logger)
        let producer = try KafkaProducer(
            configuration: KafkaProducerConfiguration(
                bootstrapServers: TestEnvironment.kafkaBrokers, clientId: "test", properties: producerProperties),
            logger: logger)
        let evaluator = try Evaluator(
            configuration: EvaluatorConfiguration(
                groupId: evaluatorGroup, topics: topics, engine: engine, zoneRefreshInterval: .milliseconds(500),
                staleSweepInterval: staleSweepInterval, limits: limits, maximumProducerSkew: maximumProducerSkew),
            consumerConfiguration: consumerConfiguration(clientId: "test-evaluator"), database: database,
            producer: producer, readiness: readiness, logger: logger)
        var notifierConfiguration = NotifierConfiguration(
            groupId: notifierGroup, topics: topics, initialRetryDelay: .milliseconds(200), pollInterval: .milliseconds(100),
            webhookURLPolicy: webhookURLPolicy)
        configureNotifier(&notifierConfiguration)
        let notifier = try Notifier(
            configuration: notifierConfiguration,
            consumerConfiguration: consumerConfiguration(clientId: "test-notifier"), database: database,
            producer: producer, sealer: sealer, hostResolver: hostResolver, readiness: readiness, logger: logger)
        let received = ReceivedWebhooks()
        let ports = AsyncStream.makeStream(of: (String, Int).self)
        let dependencies = IngestDependencies(
            producer: producer, projects: ProjectStore(database: database, logger: logger),
            zones: ZoneStore(database: database, logger: logger),
            webhooks: WebhookStore(database: database, logger: logger, sealer: sealer),
            devices: DeviceRecords(database: database, logger: logger),
            idempotency: IdempotencyStore(database: database, logger: logger, sealer: sealer), readiness: Readiness(),
            registry: registry)
        let ingest = buildIngestApplication(
            configuration: IngestConfiguration(port: 0, limits: limits, topics: topics, webhookURLPolicy: webhookURLPolicy),
            dependencies: dependencies, logger: logger,
            onServerRunning: { ports.continuation.yield(("ingest", $0)) })
        let receiver = WebhookReceiver.application(secret: try WebhookSecret(secret), received: received, respond: respond) {
            ports.continuation.yield(("receiver", $0))
        }
        let services: [any Service] =
            [database, producer] + evaluator.services.map { stages.gate($0, as: .evaluator) }
            + notifier.services.map { stages.gate($0, as: .notifier) } + [ingest, receiver]
        var groupConfiguration = ServiceGroupConfiguration(
            services: services.map { .init(service: $0) }, gracefulShutdownSignals: [], logger: logger)
        // A service that does not stop fails the run loudly instead of hanging it.
        groupConfiguration.maximumGracefulShutdownDuration = .seconds(60)
        groupConfiguration.maximumCancellationDuration = .seconds(60)
        let group = ServiceGroup(configuration: groupConfiguration)

        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask {
                // A service that fails at start ends the group before both servers listen.
                defer { ports.continuation.finish() }
                try await group.run()
            }
            var known: [String: Int] = [:]
            for await (name, port) in ports.stream {
                known[name] = port
                if known.count == 2 { break }
            }
            guard known.count == 2 else {
                try await tasks.waitForAll()
                throw TestFailure("the pipeline stopped before its servers listened")
            }
            do {
                try await addEndpoint(url: "http://127.0.0.1:\(known["receiver"]!)/hooks")
                try await body(known["ingest"]!, received)
            } catch {
                // Stopped as after a test that passed: throwing at once would cancel the group,
                // whose services then have only the cancellation limit to end.
                await group.triggerGracefulShutdown()
                try? await tasks.waitForAll()
                throw error
            }
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
    }
}

/// A new, empty database on the test Postgres server, for a test whose notifiers must be
/// the only ones claiming its deliveries.
func freshDatabaseURL(logger: Logger) async throws -> String {
    let name = "checkin_test_\(UUID().uuidString.prefix(8).lowercased())"
    try await Database.withTemporaryClient(
        configuration: try DatabaseConfiguration(url: TestEnvironment.databaseURL), logger: logger
    ) { database in
        try await database.client.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"), logger: logger)
    }
    guard var components = URLComponents(string: TestEnvironment.databaseURL) else {
        throw TestFailure("CHECKIN_DATABASE_URL is not a URL")
    }
    components.path = "/" + name
    guard let url = components.string else { throw TestFailure("no URL for database \(name)") }
    return url
}

/// Runs `body` on the database at `url`, migrated up to `migrations` first.
func withMigratedDatabase<T: Sendable>(
    url: String, migrations: [Migration] = Migration.all, logger: Logger, _ body: @Sendable (Database) async throws -> T
) async throws -> T {
    try await Database.withTemporaryClient(configuration: try DatabaseConfiguration(url: url), logger: logger) { database in
        try await Migrator(database: database, logger: logger).migrate(migrations)
        return try await body(database)
    }
}

/// Sends a JSON body to the ingest service and returns the status and body.
func post(
    _ body: Data, to url: String, key: String?, method: HTTPMethod = .POST
) async throws -> (status: Int, contentType: String?, body: String) {
    var request = HTTPClientRequest(url: url)
    request.method = method
    request.headers.add(name: "content-type", value: "application/json")
    if let key { request.headers.add(name: "authorization", value: "Bearer \(key)") }
    request.body = .bytes(ByteBuffer(bytes: body))
    let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
    let answer = try await response.body.collect(upTo: 1 << 20)
    return (Int(response.status.code), response.headers.first(name: "content-type"), String(buffer: answer))
}
