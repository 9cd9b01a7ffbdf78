import Persistence

/// Whether the pipeline is healthy and, when it is not, why: what `checkin status` prints and
/// what `GET /v1/status` answers, so that a remote deployment reads the same table.
package struct PipelineStatus: Codable, Sendable {
    package struct ServiceReadiness: Codable, Sendable {
        package var url: String
        package var ready: Bool
        package var components: [String: Bool]
        /// The parts of the pipeline it runs, as its `/ready` says.
        package var serves: [String] = []
        /// Why the service could not be asked, when it could not.
        package var error: String?

        package init(url: String, ready: Bool, components: [String: Bool], serves: [String] = [], error: String? = nil) {
            self.url = url
            self.ready = ready
            self.components = components
            self.serves = serves
            self.error = error
        }
    }

    /// The consumer group a worker is in now: the configured group id until a rebalance
    /// that never completed moved the group on to its next incarnation (`<group>~<n>`).
    package struct ConsumerGroup: Codable, Sendable {
        package var worker: String
        package var incarnation: Int
        package var groupId: String
        /// Whose committed offsets the lag counts from: the evaluators keep theirs in Postgres
        /// under the configured group id, whatever the incarnation; the notifier commits to its group.
        package var offsetsGroup: String
        package var offsetsSource: String

        package init(worker: String, incarnation: Int, groupId: String, offsetsGroup: String, offsetsSource: String) {
            self.worker = worker
            self.incarnation = incarnation
            self.groupId = groupId
            self.offsetsGroup = offsetsGroup
            self.offsetsSource = offsetsSource
        }
    }

    package struct PartitionLag: Codable, Sendable {
        /// The group id whose committed offsets were read.
        package var group: String
        package var topic: String
        package var partition: Int32
        package var committed: Int64?
        package var end: Int64
        package var lag: Int64

        package init(group: String, topic: String, partition: Int32, committed: Int64?, end: Int64, lag: Int64) {
            self.group = group
            self.topic = topic
            self.partition = partition
            self.committed = committed
            self.end = end
            self.lag = lag
        }
    }

    package struct DeadLetters: Codable, Sendable {
        package var topic: String
        package var lastHour: Int64
        package var total: Int64
        /// Those `checkin dead-letters redrive` has not sent back yet; nil when Postgres,
        /// which keeps how far each partition was sent back, did not answer.
        package var notSentBack: Int64?

        package init(topic: String, lastHour: Int64, total: Int64, notSentBack: Int64?) {
            self.topic = topic
            self.lastHour = lastHour
            self.total = total
            self.notSentBack = notSentBack
        }
    }

    package var services: [ServiceReadiness] = []
    package var groups: [ConsumerGroup] = []
    package var lag: [PartitionLag] = []
    /// Seconds since the oldest fix not yet evaluated was written; nil when none is waiting.
    package var oldestUnprocessedFixAgeSeconds: Double?
    package var deadLetters: [DeadLetters] = []
    package var deliveries: [EndpointBacklog] = []
    /// What makes the pipeline unhealthy now (the command exits non-zero).
    package var problems: [String] = []
    /// What an operator should look at, but which stops nothing.
    package var warnings: [String] = []
    package var healthy: Bool { problems.isEmpty }

    package init() {}
}

/// When `checkin status` calls the pipeline unhealthy, and how long it waits for each source.
package struct PipelineStatusLimits: Sendable, Equatable {
    /// Records a consumer group may be behind, summed over partitions.
    package var maximumLag: Int64
    /// Seconds the oldest unprocessed fix may wait.
    package var maximumFixAge: Double
    /// How long each service, the broker and Postgres are waited for.
    package var timeout: Duration

    package static let defaults = PipelineStatusLimits(maximumLag: 10_000, maximumFixAge: 300, timeout: .seconds(5))

    package init(maximumLag: Int64, maximumFixAge: Double, timeout: Duration) {
        self.maximumLag = maximumLag
        self.maximumFixAge = maximumFixAge
        self.timeout = timeout
    }
}

/// Reads the pipeline's status for `GET /v1/status`. The process that runs the ingest builds
/// it (it knows the evaluators' and notifiers' groups and topics); the routes only ask.
package protocol PipelineStatusSource: Sendable {
    /// The status, with `own` (the readiness of the ingest answering) first among the services.
    func status(limits: PipelineStatusLimits, own: PipelineStatus.ServiceReadiness) async -> PipelineStatus
}
