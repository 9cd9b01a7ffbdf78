/// How a ``KafkaProducer`` connects; the reliability settings (idempotence,
/// `acks=all`, Java-compatible partitioning) are fixed by the producer itself.
package struct KafkaProducerConfiguration: Sendable {
    /// Comma-separated `host:port` list.
    package var bootstrapServers: String
    package var clientId: String
    /// How long librdkafka keeps retrying a record before reporting it failed.
    package var messageTimeout: Duration
    /// How long librdkafka gathers records into one produce request (`linger.ms`); nil: its own (5 ms).
    package var linger: Duration?
    /// Any further librdkafka properties (`security.protocol`, `linger.ms`, ...); they win over the defaults.
    package var properties: [String: String]

    package init(
        bootstrapServers: String, clientId: String = "kafka-producer", messageTimeout: Duration = .seconds(30),
        linger: Duration? = nil, properties: [String: String] = [:]
    ) {
        self.bootstrapServers = bootstrapServers
        self.clientId = clientId
        self.messageTimeout = messageTimeout
        self.linger = linger
        self.properties = properties
    }

    func librdkafkaProperties() -> [String: String] {
        var result: [String: String] = [
            "bootstrap.servers": bootstrapServers,
            "client.id": clientId,
            "enable.idempotence": "true",
            "acks": "all",
            "partitioner": "murmur2_random",
            "message.timeout.ms": String(messageTimeout.milliseconds),
            "log.queue": "true",
        ]
        if let linger { result["linger.ms"] = String(linger.milliseconds) }
        result.merge(properties) { _, explicit in explicit }
        return result
    }
}

/// How a ``KafkaConsumer`` joins its group. Offsets are committed only by the
/// application (``KafkaConsumer/commit(_:)``), never automatically.
package struct KafkaConsumerConfiguration: Sendable {
    /// Where a partition without a committed offset (and without a listener's offset) starts.
    package enum AutoOffsetReset: String, Sendable {
        case earliest
        case latest
    }

    /// How the group spreads partitions; `cooperativeSticky` moves only what must move.
    package enum AssignmentStrategy: String, Sendable {
        case range
        case roundRobin = "roundrobin"
        case cooperativeSticky = "cooperative-sticky"
    }

    package var bootstrapServers: String
    package var groupId: String
    package var clientId: String
    package var topics: [String]
    package var autoOffsetReset: AutoOffsetReset
    /// `nil` keeps librdkafka's defaults (right for Apache Kafka); Tansu needs short ones (6 s / 1 s / 10 s).
    package var sessionTimeout: Duration?
    package var heartbeatInterval: Duration?
    package var maxPollInterval: Duration?
    package var assignmentStrategy: AssignmentStrategy
    /// The largest batch ``KafkaConsumer/batches`` yields.
    package var maxBatchSize: Int
    /// The most bytes of records the consumer holds for the application, fetched ahead and
    /// in batches not yet taken, whatever the records' sizes: a quarter in librdkafka's queue,
    /// the rest in batches of at most an eighth each (a record larger than that is a batch
    /// of its own). With about two batches in the application's hands the process holds
    /// about this much of records. Nil: bounded by record counts only.
    package var bufferBytes: Int?
    /// How often the offsets handed to ``KafkaConsumer/commit(_:)`` go to the group: nil, at
    /// once; otherwise at most once an interval (the latest of each partition), when the
    /// consumer closes, and when its partitions are revoked if the group still takes commits
    /// then (a partition's next owner may start up to an interval earlier: at least once).
    /// Each commit is a write to the broker, which a consumer of many small batches pays for.
    package var commitInterval: Duration?
    /// Any further librdkafka properties; they win over the defaults.
    package var properties: [String: String]

    package init(
        bootstrapServers: String, groupId: String, clientId: String = "kafka-consumer", topics: [String],
        autoOffsetReset: AutoOffsetReset = .earliest, sessionTimeout: Duration? = nil,
        heartbeatInterval: Duration? = nil, maxPollInterval: Duration? = nil,
        assignmentStrategy: AssignmentStrategy = .range, maxBatchSize: Int = 500, bufferBytes: Int? = nil,
        commitInterval: Duration? = nil, properties: [String: String] = [:]
    ) {
        self.bootstrapServers = bootstrapServers
        self.groupId = groupId
        self.clientId = clientId
        self.topics = topics
        self.autoOffsetReset = autoOffsetReset
        self.sessionTimeout = sessionTimeout
        self.heartbeatInterval = heartbeatInterval
        self.maxPollInterval = maxPollInterval
        self.assignmentStrategy = assignmentStrategy
        self.maxBatchSize = maxBatchSize
        self.bufferBytes = bufferBytes
        self.commitInterval = commitInterval
        self.properties = properties
    }

    /// The most bytes of records in one batch (see ``bufferBytes``).
    var maxBatchBytes: Int {
        bufferBytes.map { max(1, $0 / 8) } ?? Int.max
    }

    func librdkafkaProperties() -> [String: String] {
        var result: [String: String] = [
            "bootstrap.servers": bootstrapServers,
            "group.id": groupId,
            "client.id": clientId,
            "enable.auto.commit": "false",
            "enable.auto.offset.store": "false",
            "auto.offset.reset": autoOffsetReset.rawValue,
            "partition.assignment.strategy": assignmentStrategy.rawValue,
            "log.queue": "true",
        ]
        if let sessionTimeout { result["session.timeout.ms"] = String(sessionTimeout.milliseconds) }
        if let heartbeatInterval { result["heartbeat.interval.ms"] = String(heartbeatInterval.milliseconds) }
        if let maxPollInterval { result["max.poll.interval.ms"] = String(maxPollInterval.milliseconds) }
        if let bufferBytes {
            // The queue of records fetched ahead, and one fetch response (which librdkafka
            // wants at least as large as a record may be, `message.max.bytes`, and no larger
            // than its default 50 MB under `receive.message.max.bytes`).
            result["queued.max.messages.kbytes"] = String(min(2_097_151, max(1, bufferBytes / 4 / 1024)))
            result["fetch.max.bytes"] = String(min(52_428_800, max(1_048_576, bufferBytes / 16)))
        }
        result.merge(properties) { _, explicit in explicit }
        return result
    }
}

extension Duration {
    /// Whole milliseconds, as librdkafka's `*.ms` properties and timeouts want them.
    var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
