import Foundation
import Kafka
import Logging
import Persistence
import ServiceSupport
import Shared

/// Everything a service process reads from its environment, read once at start so
/// that a bad value stops it at once with a message naming the variable.
struct ProcessSettings {
    var environment: EnvironmentReader
    var database: DatabaseConfiguration
    var brokers: String
    var topics: Topics
    var partitions: Int32
    var createTopics: Bool
    var opsHost: String
    var consumerTimeouts: (session: Duration?, heartbeat: Duration?, maxPoll: Duration?)
    /// The most bytes of records each consumer holds ahead of its work, whatever their sizes.
    var consumerBufferBytes: Int
    /// librdkafka properties of the embedded local broker's consumers, under those the environment sets.
    var localConsumerProperties: [String: String] = [:]
    /// How long a SIGTERM waits for work in flight before it is cancelled.
    var shutdownGrace: Duration
    /// `CHECKIN_SECRET_KEY`, which seals webhook secrets at rest.
    var secretKey: SecretEncryptionKey?
    var secretKeyFallback: SecretKeyFallback

    /// - Parameters:
    ///   - localBroker: the process runs against the embedded local broker,
    ///     whose consumer groups need short timeouts (see the README).
    ///   - localDevelopment: `checkin dev` and `demo`: webhooks to this machine over http are
    ///     allowed and a local secret key is made, unless the environment says otherwise.
    init(environment: EnvironmentReader = EnvironmentReader(), localBroker: Bool = false, localDevelopment: Bool = false) throws {
        var environment = environment
        if localDevelopment { environment.defaultToLocalWebhooks() }
        self.environment = environment
        secretKey = try environment.secretEncryptionKey()
        secretKeyFallback = localDevelopment ? .generateLocal : .required
        let url = environment.string("CHECKIN_DATABASE_URL", default: DatabaseConfiguration.defaultURL)
        database = try DatabaseConfiguration(
            url: url, maximumConnections: try environment.int("CHECKIN_DATABASE_POOL_SIZE", default: 10, range: 1...500),
            idleInTransactionTimeout: try environment.duration(
                "CHECKIN_DATABASE_IDLE_IN_TRANSACTION_TIMEOUT", default: .seconds(15)))
        shutdownGrace = try environment.duration("CHECKIN_SHUTDOWN_GRACE", default: .seconds(30))
        brokers = environment.string("CHECKIN_KAFKA_BROKERS", default: "127.0.0.1:9092")
        topics = Topics(
            fixes: environment.string("CHECKIN_TOPIC_FIXES", default: "checkin.fixes"),
            fixesDeadLetter: environment.string("CHECKIN_TOPIC_FIXES_DLQ", default: "checkin.fixes.dlq"),
            checkIns: environment.string("CHECKIN_TOPIC_CHECKINS", default: "checkin.checkins"),
            checkOuts: environment.string("CHECKIN_TOPIC_CHECKOUTS", default: "checkin.checkouts"),
            eventsDeadLetter: environment.string("CHECKIN_TOPIC_EVENTS_DLQ", default: "checkin.events.dlq"))
        partitions = Int32(
            try environment.int(
                "CHECKIN_KAFKA_PARTITIONS", default: localBroker ? Self.localBrokerPartitions : 8, range: 1...10_000))
        createTopics = try environment.bool("CHECKIN_KAFKA_CREATE_TOPICS", default: true)
        consumerBufferBytes = try environment.int(
            "CHECKIN_CONSUMER_BUFFER_BYTES", default: 256 << 20, range: (16 << 20)...(64 << 30))
        opsHost = environment.string("CHECKIN_HTTP_HOST", default: "127.0.0.1")
        func milliseconds(_ name: String, localDefault: Int) throws -> Duration? {
            if let value = environment.optionalString(name) {
                guard let ms = Int(value), ms > 0 else {
                    throw ConfigurationError(variable: name, value: value, expected: "a positive number of milliseconds")
                }
                return .milliseconds(ms)
            }
            return localBroker ? .milliseconds(localDefault) : nil
        }
        if localBroker {
            // The local broker holds every fetch for fetch.wait.max.ms (500 ms by default) even when
            // records are waiting, which would add half a second to each hop of the pipeline.
            localConsumerProperties["fetch.wait.max.ms"] = "20"
        }
        consumerTimeouts = (
            try milliseconds("CHECKIN_KAFKA_SESSION_TIMEOUT_MS", localDefault: 6000),
            try milliseconds("CHECKIN_KAFKA_HEARTBEAT_INTERVAL_MS", localDefault: 1000),
            try milliseconds("CHECKIN_KAFKA_MAX_POLL_INTERVAL_MS", localDefault: 10000)
        )
    }

    /// Partitions of the topics `dev` and `demo` create on the local broker: as many as the
    /// machine has cores (2 to 8). Each partition costs the local broker fetch work (it lists
    /// every batch the partition holds on each fetch), and one process of each service gains
    /// no parallelism from more partitions than cores: on 2 cores, the webhooks' p99 at 5,000
    /// fixes/s was two to four times as long with 8 partitions as with 2 (README, Performance).
    static var localBrokerPartitions: Int { min(8, max(2, ProcessInfo.processInfo.activeProcessorCount)) }

    func producerConfiguration(clientId: String) -> KafkaProducerConfiguration {
        var configuration = KafkaProducerConfiguration(bootstrapServers: brokers, clientId: clientId)
        configuration.properties = environment.kafkaProperties
        return configuration
    }

    func consumerConfiguration(clientId: String) -> KafkaConsumerConfiguration {
        var configuration = KafkaConsumerConfiguration(bootstrapServers: brokers, groupId: "", clientId: clientId, topics: [])
        configuration.sessionTimeout = consumerTimeouts.session
        configuration.heartbeatInterval = consumerTimeouts.heartbeat
        configuration.maxPollInterval = consumerTimeouts.maxPoll
        configuration.bufferBytes = consumerBufferBytes
        configuration.properties = localConsumerProperties.merging(environment.kafkaProperties) { _, configured in configured }
        return configuration
    }

    /// Waits for Postgres and the broker, applies migrations, seals stored webhook secrets
    /// and creates the topics, so that a service either starts ready or stops with a clear
    /// reason. Returns what seals and opens webhook secrets.
    @discardableResult
    func prepare(logger: Logger) async throws -> SecretSealer {
        if secretKey == nil && secretKeyFallback == .required { throw SecretKeyMissingError() }
        let sealer = try await Database.withTemporaryClient(configuration: database, logger: logger) { database in
            try await database.waitUntilReachable(timeout: .seconds(30))
            try await Migrator(database: database, logger: logger).migrate()
            let sealer = try await SecretKeyStore(database: database, logger: logger).sealer(
                configured: secretKey, fallback: secretKeyFallback)
            try await WebhookStore(database: database, logger: logger, sealer: sealer).sealStoredSecrets()
            return sealer
        }
        try await KafkaAdmin.waitUntilReachable(bootstrapServers: brokers, timeout: .seconds(30), logger: logger)
        if createTopics {
            try await KafkaAdmin.createTopics(
                topics.all.map { (name: $0, partitions: partitions) }, bootstrapServers: brokers, timeout: .seconds(30),
                logger: logger)
        }
        return sealer
    }
}

extension EnvironmentReader {
    /// Any `CHECKIN_KAFKA_PROPERTY_<name>` is passed to librdkafka as `<name>` with
    /// `_` read as `.`: `CHECKIN_KAFKA_PROPERTY_security_protocol=ssl` sets `security.protocol`.
    var kafkaProperties: [String: String] {
        let prefix = "CHECKIN_KAFKA_PROPERTY_"
        var result: [String: String] = [:]
        for (name, value) in values where name.hasPrefix(prefix) {
            result[name.dropFirst(prefix.count).replacingOccurrences(of: "_", with: ".")] = value
        }
        return result
    }
}
