import Foundation
import Kafka
import Logging
import Persistence
import ServiceSupport
import Shared

/// Everything a service process reads from its environment, read once at start so
/// that a bad value stops it at once with a message naming the variable.
package struct ProcessSettings: Sendable {
    package var environment: EnvironmentReader
    package var database: DatabaseConfiguration
    package var brokers: String
    package var topics: Topics
    package var partitions: Int32
    package var createTopics: Bool
    /// Copies of each partition of the topics a service creates; -1: the broker's default.
    package var replicationFactor: Int32
    /// In-sync replicas a write to the created topics needs (`min.insync.replicas`); nil: the broker's default.
    package var minimumInSyncReplicas: Int?
    /// The librdkafka properties every client of the cluster gets (`CHECKIN_KAFKA_PROPERTY_*`): TLS, SASL, tuning.
    package var kafkaProperties: [String: String]
    package var opsHost: String
    package var consumerTimeouts: (session: Duration?, heartbeat: Duration?, maxPoll: Duration?)
    /// The most bytes of records each consumer holds ahead of its work, whatever their sizes.
    package var consumerBufferBytes: Int
    /// librdkafka properties of the embedded local broker's consumers, under those the environment sets.
    package var localConsumerProperties: [String: String] = [:]
    /// How long the ingest's producer gathers fixes into one produce request (`linger.ms`,
    /// under `CHECKIN_KAFKA_PROPERTY_linger_ms` like every typed setting); nil: librdkafka's (5 ms).
    package var ingestLinger: Duration?
    /// How often consumers send their offsets to the group (nil: after every batch).
    package var commitInterval: Duration?
    /// How long a SIGTERM waits for work in flight before it is cancelled.
    package var shutdownGrace: Duration
    /// `CHECKIN_SECRET_KEY`, which seals webhook secrets at rest.
    package var secretKey: SecretEncryptionKey?
    package var secretKeyFallback: SecretKeyFallback
    /// The services an ingest asks for their readiness when it answers `GET /v1/status`.
    package var statusReadyURLs: [String]

    /// - Parameters:
    ///   - localBroker: the process runs against the embedded local broker,
    ///     whose consumer groups need short timeouts (see docs/configuration.md).
    ///   - localDevelopment: `checkin dev` and `demo`: webhooks to this machine over http are
    ///     allowed and a local secret key is made, unless the environment says otherwise.
    package init(environment: EnvironmentReader = EnvironmentReader(), localBroker: Bool = false, localDevelopment: Bool = false) throws {
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
        statusReadyURLs = try Self.readyURLs(environment.string("CHECKIN_STATUS_READY_URLS", default: ""))
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
        replicationFactor = Int32(try environment.int("CHECKIN_KAFKA_REPLICATION_FACTOR", default: -1, range: -1...32767))
        guard replicationFactor != 0 else {
            throw ConfigurationError(
                variable: "CHECKIN_KAFKA_REPLICATION_FACTOR", value: "0", expected: "at least 1, or -1 for the broker's default")
        }
        minimumInSyncReplicas = try environment.optionalString("CHECKIN_KAFKA_MIN_INSYNC_REPLICAS").map { _ in
            try environment.int("CHECKIN_KAFKA_MIN_INSYNC_REPLICAS", default: 1, range: 1...32767)
        }
        if let minimumInSyncReplicas, replicationFactor > 0, minimumInSyncReplicas > replicationFactor {
            throw ConfigurationError(
                variable: "CHECKIN_KAFKA_MIN_INSYNC_REPLICAS", value: "\(minimumInSyncReplicas)",
                expected: "at most CHECKIN_KAFKA_REPLICATION_FACTOR (\(replicationFactor)): no write could succeed")
        }
        kafkaProperties = environment.kafkaProperties
        let kafkaProblems = KafkaSettingsCheck.problems(in: kafkaProperties)
        guard kafkaProblems.isEmpty else { throw KafkaSettingsError(problems: kafkaProblems) }
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
            // records are waiting, which would add half a second to each hop of the pipeline; and
            // each fetch's reads cost it more as it holds more batches (below), so not too few.
            localConsumerProperties["fetch.wait.max.ms"] = "40"
        }
        // Each produce request leaves a batch object per partition on the local broker, which
        // sweeps every object it touched in the last ten minutes on each later read and write
        // (docs/performance.md): gathering a few requests' fixes into one keeps a sustained load
        // from slowing it down.
        ingestLinger = try milliseconds("CHECKIN_INGEST_LINGER_MS", localDefault: 50)
        // Each offset commit is a write to the local broker (its own object), which pays for it
        // as for a produce: a second's commits in one.
        commitInterval = try milliseconds("CHECKIN_KAFKA_COMMIT_INTERVAL_MS", localDefault: 1000)
        consumerTimeouts = (
            try milliseconds("CHECKIN_KAFKA_SESSION_TIMEOUT_MS", localDefault: 6000),
            try milliseconds("CHECKIN_KAFKA_HEARTBEAT_INTERVAL_MS", localDefault: 1000),
            try milliseconds("CHECKIN_KAFKA_MAX_POLL_INTERVAL_MS", localDefault: 10000)
        )
    }

    /// Partitions of the topics `dev` and `demo` create on the local broker: one. Every
    /// partition a produce request writes is one more batch object that the local broker's
    /// every later read and write pays for, and every partition a fetch reads costs it reads of
    /// its own: over ten minutes at 5,000 fixes/s the webhooks' p99 grew from 73 to 297 ms with
    /// 2 partitions, from 68 to 164 ms with 1 (docs/performance.md). A closed loop evaluated
    /// about a tenth slower with 1 than with 2.
    package static let localBrokerPartitions = 1

    package func producerConfiguration(clientId: String) -> KafkaProducerConfiguration {
        var configuration = KafkaProducerConfiguration(bootstrapServers: brokers, clientId: clientId)
        configuration.properties = kafkaProperties
        return configuration
    }

    /// The ingest's producer: one of its own, so that gathering fixes into fewer produce
    /// requests delays no event of the evaluator's or dead letter of the notifier's.
    package func ingestProducerConfiguration() -> KafkaProducerConfiguration {
        var configuration = producerConfiguration(clientId: "checkin-ingest")
        configuration.linger = ingestLinger
        return configuration
    }

    package func consumerConfiguration(clientId: String) -> KafkaConsumerConfiguration {
        var configuration = KafkaConsumerConfiguration(bootstrapServers: brokers, groupId: "", clientId: clientId, topics: [])
        configuration.sessionTimeout = consumerTimeouts.session
        configuration.heartbeatInterval = consumerTimeouts.heartbeat
        configuration.maxPollInterval = consumerTimeouts.maxPoll
        configuration.commitInterval = commitInterval
        configuration.bufferBytes = consumerBufferBytes
        configuration.properties = localConsumerProperties.merging(kafkaProperties) { _, configured in configured }
        return configuration
    }

    /// Waits for Postgres and the broker, applies migrations, seals stored webhook secrets
    /// and creates the topics, so that a service either starts ready or stops with a clear
    /// reason. Returns what seals and opens webhook secrets.
    @discardableResult
    package func prepare(logger: Logger) async throws -> SecretSealer {
        if secretKey == nil && secretKeyFallback == .required { throw SecretKeyMissingError() }
        let sealer = try await Database.withTemporaryClient(configuration: database, logger: logger) { database in
            try await database.waitUntilReachable(timeout: .seconds(8))
            try await Migrator(database: database, logger: logger).migrate()
            let sealer = try await SecretKeyStore(database: database, logger: logger).sealer(
                configured: secretKey, fallback: secretKeyFallback)
            try await WebhookStore(database: database, logger: logger, sealer: sealer).sealStoredSecrets()
            return sealer
        }
        try await KafkaAdmin.waitUntilReachable(
            bootstrapServers: brokers, properties: kafkaProperties, timeout: .seconds(30), logger: logger)
        logger.info(
            "Kafka: producers wait for every in-sync replica (acks=all) and are idempotent",
            metadata: [
                "brokers": "\(brokers)", "security.protocol": "\(kafkaProperties["security.protocol"] ?? "plaintext")",
                "sasl.mechanism": "\(kafkaProperties["sasl.mechanism"] ?? kafkaProperties["sasl.mechanisms"] ?? "none")",
            ])
        if createTopics {
            try await KafkaAdmin.createTopics(
                topics.all.map { (name: $0, partitions: partitions) }, replicationFactor: replicationFactor,
                topicConfiguration: minimumInSyncReplicas.map { ["min.insync.replicas": String($0)] } ?? [:],
                bootstrapServers: brokers, properties: kafkaProperties, timeout: .seconds(30), logger: logger)
        }
        return sealer
    }
}

/// The `CHECKIN_KAFKA_PROPERTY_*` settings no Kafka client could work with, each named by its variable.
package struct KafkaSettingsError: Error, CustomStringConvertible {
    package var problems: [KafkaSettingProblem]

    package var description: String {
        "the Kafka settings cannot work: "
            + problems.map { "\(EnvironmentReader.kafkaPropertyVariable($0.property)): \($0.problem)" }.joined(separator: "; ")
    }
}

extension EnvironmentReader {
    /// The variable that sets a librdkafka property: `security.protocol` → `CHECKIN_KAFKA_PROPERTY_security_protocol`.
    package static func kafkaPropertyVariable(_ property: String) -> String {
        "CHECKIN_KAFKA_PROPERTY_" + property.replacingOccurrences(of: ".", with: "_")
    }

    /// Any `CHECKIN_KAFKA_PROPERTY_<name>` is passed to librdkafka as `<name>` with
    /// `_` read as `.`: `CHECKIN_KAFKA_PROPERTY_security_protocol=ssl` sets `security.protocol`.
    package var kafkaProperties: [String: String] {
        let prefix = "CHECKIN_KAFKA_PROPERTY_"
        var result: [String: String] = [:]
        for (name, value) in values where name.hasPrefix(prefix) {
            result[name.dropFirst(prefix.count).replacingOccurrences(of: "_", with: ".")] = value
        }
        return result
    }
}

extension ProcessSettings {
    /// `CHECKIN_STATUS_READY_URLS`: http or https URLs, comma-separated.
    package static func readyURLs(_ text: String) throws -> [String] {
        let urls = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        for url in urls {
            guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
                scheme == "http" || scheme == "https", components.host?.isEmpty == false
            else {
                throw ConfigurationError(
                    variable: "CHECKIN_STATUS_READY_URLS", value: text,
                    expected: "/ready URLs separated by commas, such as http://checkin-evaluator:8081/ready")
            }
        }
        return urls
    }
}
