import Persistence

/// Whether the pipeline is healthy and, when it is not, why: what `checkin status` prints and
/// what `GET /v1/status` answers, so that a remote deployment reads the same table.
public struct PipelineStatus: Codable, Sendable {
    public struct ServiceReadiness: Codable, Sendable {
        public var url: String
        public var ready: Bool
        public var components: [String: Bool]
        /// The parts of the pipeline it runs, as its `/ready` says.
        public var serves: [String] = []
        /// Why the service could not be asked, when it could not.
        public var error: String?

        public init(url: String, ready: Bool, components: [String: Bool], serves: [String] = [], error: String? = nil) {
            self.url = url
            self.ready = ready
            self.components = components
            self.serves = serves
            self.error = error
        }
    }

    /// The consumer group a worker is in now: the configured group id until a rebalance
    /// that never completed moved the group on to its next incarnation (`<group>~<n>`).
    public struct ConsumerGroup: Codable, Sendable {
        public var worker: String
        public var incarnation: Int
        public var groupId: String
        /// Whose committed offsets the lag counts from: the evaluators keep theirs in Postgres
        /// under the configured group id, whatever the incarnation; the notifier commits to its group.
        public var offsetsGroup: String
        public var offsetsSource: String

        public init(worker: String, incarnation: Int, groupId: String, offsetsGroup: String, offsetsSource: String) {
            self.worker = worker
            self.incarnation = incarnation
            self.groupId = groupId
            self.offsetsGroup = offsetsGroup
            self.offsetsSource = offsetsSource
        }
    }

    public struct PartitionLag: Codable, Sendable {
        /// The group id whose committed offsets were read.
        public var group: String
        public var topic: String
        public var partition: Int32
        public var committed: Int64?
        public var end: Int64
        public var lag: Int64

        public init(group: String, topic: String, partition: Int32, committed: Int64?, end: Int64, lag: Int64) {
            self.group = group
            self.topic = topic
            self.partition = partition
            self.committed = committed
            self.end = end
            self.lag = lag
        }
    }

    public struct DeadLetters: Codable, Sendable {
        public var topic: String
        public var lastHour: Int64
        public var total: Int64
        /// Those `checkin dead-letters redrive` has not sent back yet; nil when Postgres,
        /// which keeps how far each partition was sent back, did not answer.
        public var notSentBack: Int64?

        public init(topic: String, lastHour: Int64, total: Int64, notSentBack: Int64?) {
            self.topic = topic
            self.lastHour = lastHour
            self.total = total
            self.notSentBack = notSentBack
        }
    }

    public var services: [ServiceReadiness] = []
    public var groups: [ConsumerGroup] = []
    public var lag: [PartitionLag] = []
    /// Seconds since the oldest fix not yet evaluated was written; nil when none is waiting.
    public var oldestUnprocessedFixAgeSeconds: Double?
    public var deadLetters: [DeadLetters] = []
    public var deliveries: [EndpointBacklog] = []
    /// What makes the pipeline unhealthy now (the command exits non-zero).
    public var problems: [String] = []
    /// What an operator should look at, but which stops nothing.
    public var warnings: [String] = []
    public var healthy: Bool { problems.isEmpty }

    public init() {}
}

/// When `checkin status` calls the pipeline unhealthy, and how long it waits for each source.
public struct PipelineStatusLimits: Sendable, Equatable {
    /// Records a consumer group may be behind, summed over partitions.
    public var maximumLag: Int64
    /// Seconds the oldest unprocessed fix may wait.
    public var maximumFixAge: Double
    /// How long each service, the broker and Postgres are waited for.
    public var timeout: Duration

    public static let defaults = PipelineStatusLimits(maximumLag: 10_000, maximumFixAge: 300, timeout: .seconds(5))

    public init(maximumLag: Int64, maximumFixAge: Double, timeout: Duration) {
        self.maximumLag = maximumLag
        self.maximumFixAge = maximumFixAge
        self.timeout = timeout
    }
}

/// Reads the pipeline's status for `GET /v1/status`. The process that runs the ingest builds
/// it (it knows the evaluators' and notifiers' groups and topics); the routes only ask.
public protocol PipelineStatusSource: Sendable {
    /// The status, with `own` (the readiness of the ingest answering) first among the services.
    func status(limits: PipelineStatusLimits, own: PipelineStatus.ServiceReadiness) async -> PipelineStatus
}
