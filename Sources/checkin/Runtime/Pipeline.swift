import Foundation
import AsyncHTTPClient
import CommandSupport
import Evaluator
import Hummingbird
import Ingest
import Kafka
import Logging
import Notifier
import Persistence
import Prometheus
import ServiceLifecycle
import ServiceSupport
import Shared

/// Builds the services of one process from its settings: any one of the three
/// pipeline stages, or all of them together (`checkin dev`, `checkin demo`).
struct Pipeline {
    struct Stages: OptionSet {
        let rawValue: Int
        static let ingest = Stages(rawValue: 1)
        static let evaluator = Stages(rawValue: 2)
        static let notifier = Stages(rawValue: 4)
        static let all: Stages = [.ingest, .evaluator, .notifier]

        /// The stages' names, as `/ready` lists them in `serves`.
        var names: [String] {
            [(Stages.ingest, "ingest"), (.evaluator, "evaluator"), (.notifier, "notifier")].compactMap { stage, name in
                contains(stage) ? name : nil
            }
        }
    }

    let settings: ProcessSettings
    let stages: Stages
    let logger: Logger
    let readiness: Readiness
    let registry = MetricsBootstrap.prometheus()

    init(settings: ProcessSettings, stages: Stages, logger: Logger) {
        self.settings = settings
        self.stages = stages
        self.logger = logger
        self.readiness = Readiness(serves: stages.names)
    }

    /// Services in start order; a `ServiceGroup` stops them in reverse, so the HTTP
    /// server stops taking fixes first and the database goes last.
    /// - Parameter sealer: seals and opens webhook secrets, from `ProcessSettings.prepare`.
    func services(sealer: SecretSealer, onIngestRunning: @escaping @Sendable (Int) async -> Void = { _ in }) throws -> [any Service] {
        let database = Database(configuration: settings.database, logger: logger)
        var services: [any Service] = [database]
        var producer: KafkaProducer?
        if stages.contains(.evaluator) || stages.contains(.notifier) {
            let created = try KafkaProducer(configuration: settings.producerConfiguration(clientId: "checkin"), logger: logger)
            services.append(created)
            producer = created
        }
        if stages.contains(.evaluator), let producer {
            let evaluator = try Evaluator(
                configuration: EvaluatorConfiguration(environment: settings.environment, topics: settings.topics),
                consumerConfiguration: settings.consumerConfiguration(clientId: "checkin-evaluator"),
                database: database, producer: producer, readiness: readiness, logger: logger,
                onZonesLoaded: { [readiness] in readiness.set("zones", ready: true) })
            readiness.set("zones", ready: false)
            services.append(contentsOf: evaluator.services)
        }
        if stages.contains(.notifier), let producer {
            let notifier = try Notifier(
                configuration: NotifierConfiguration(environment: settings.environment, topics: settings.topics),
                consumerConfiguration: settings.consumerConfiguration(clientId: "checkin-notifier"),
                database: database, producer: producer, sealer: sealer, readiness: readiness, logger: logger)
            services.append(contentsOf: notifier.services)
        }
        // `prepare()` has reached both before any service is built; the probe follows the broker from then on.
        readiness.set("database", ready: true)
        readiness.set("broker", ready: true)
        services.append(
            KafkaBrokerProbe(bootstrapServers: settings.brokers, properties: settings.kafkaProperties, logger: logger) { [readiness] reachable in
                readiness.set("broker", ready: reachable)
            })
        if stages.contains(.ingest) {
            let producer = try KafkaProducer(configuration: settings.ingestProducerConfiguration(), logger: logger)
            // Before the HTTP server in the list: it stops after the server has answered its last request.
            services.append(producer)
            let configuration = try IngestConfiguration(environment: settings.environment, topics: settings.topics)
            // The status's own log lines would repeat what the status says.
            var statusLogger = logger
            statusLogger.logLevel = .critical
            let dependencies = IngestDependencies(
                producer: producer, projects: ProjectStore(database: database, logger: logger),
                zones: ZoneStore(database: database, logger: logger),
                webhooks: WebhookStore(database: database, logger: logger, sealer: sealer),
                devices: DeviceRecords(database: database, logger: logger),
                idempotency: IdempotencyStore(database: database, logger: logger, sealer: sealer), readiness: readiness, registry: registry,
                status: PipelineStatusReader(
                    settings: settings, services: .listed(settings.statusReadyURLs), logger: statusLogger))
            services.append(
                buildIngestApplication(
                    configuration: configuration, dependencies: dependencies, logger: logger,
                    onServerRunning: onIngestRunning))
        } else {
            let address = try httpAddress()
            services.append(
                OperationsRoutes.server(
                    host: address.host, port: address.port, readiness: readiness, registry: registry, logger: logger))
        }
        return services
    }

    /// Where the process's HTTP server listens: the ingest's API with the operations routes,
    /// or the operations routes alone (8081 for an evaluator, 8082 for a notifier by default).
    func httpAddress() throws -> HTTPAddressCheck {
        if stages.contains(.ingest) {
            let configuration = try IngestConfiguration(environment: settings.environment, topics: settings.topics)
            return HTTPAddressCheck(host: configuration.host, port: configuration.port)
        }
        let port = try settings.environment.int("CHECKIN_HTTP_PORT", default: stages == .evaluator ? 8081 : 8082, range: 0...65_535)
        return HTTPAddressCheck(host: settings.opsHost, port: port)
    }

    /// Prepares dependencies, then runs until SIGINT/SIGTERM and stops gracefully.
    func run() async throws {
        try await httpAddress().ensureFree()
        let sealer = try await settings.prepare(logger: logger)
        var configuration = ServiceGroupConfiguration(
            services: try services(sealer: sealer).map { .init(service: $0) }, gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger)
        // Work in flight gets the grace period to finish; then it is cancelled, and the
        // process ends even if a dependency never answers.
        configuration.maximumGracefulShutdownDuration = settings.shutdownGrace
        configuration.maximumCancellationDuration = .seconds(5)
        let group = ServiceGroup(configuration: configuration)
        try await group.run()
    }
}

/// Process-wide set-up shared by every command that runs services.
enum ProcessBootstrap {
    static func logger(_ label: String) throws -> Logger {
        try LoggingSetup.bootstrap()
        MetricsBootstrap.prometheus()
        let logger = Logger(label: label)
        for unknown in ConfigurationVariables.unknown(in: ProcessInfo.processInfo.environment) {
            logger.warning("\(unknown.warning)")
        }
        return logger
    }
}
