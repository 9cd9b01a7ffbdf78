import Geofence
import ServiceSupport
import Shared

/// Settings of the evaluator workers.
package struct EvaluatorConfiguration: Sendable {
    package var groupId: String
    /// How long a rebalance of the consumer group may last before the group is taken to be
    /// wedged by its coordinator and its members move to its next incarnation (see
    /// `GroupRecovery`); zero: never.
    package var rebalanceLimit: Duration = .seconds(60)
    /// Whether every evaluated fix leaves a decision record (docs/evaluation-rules.md#decision-records).
    package var recordDecisions = true
    /// Decision records are kept at least this long, and each device's newest
    /// `DecisionStore.keptPerDevice` whatever their age.
    package var decisionRetention: Duration = .seconds(86_400)
    /// How long the event log keeps an event after it was decided.
    package var eventLogRetention: Duration = .seconds(7 * 86_400)
    package var topics: Topics
    package var engine: EngineConfiguration
    /// How often the zone catalog is checked for changes.
    package var zoneRefreshInterval: Duration
    /// How often devices due a stale check-out are looked for.
    package var staleSweepInterval: Duration
    /// Records per evaluation transaction, at most: a batch takes what has arrived. Each batch
    /// costs a fixed number of round trips, so on a backlog larger batches evaluate more per second.
    package var maximumBatchSize: Int
    /// An attempt at a batch that takes longer is abandoned (rolled back) and retried.
    package var batchTimeout: Duration
    /// A zones load that takes longer is abandoned and tried again.
    package var zoneLoadTimeout: Duration
    /// Checked again on every record, for producers that write to Kafka directly.
    package var limits: InputLimits
    /// States of devices not heard from for this long are deleted (ten times as long for a
    /// device still checked in); zero keeps them for ever.
    package var deviceStateRetention: Duration
    /// How far producers' clocks (which stamp the records) may be apart. A partition counts
    /// as consumed up to its latest record time less this, so that a fix stamped before a
    /// device's stale deadline by a producer whose clock is behind another's is not judged
    /// after the deadline was passed; stale check-outs come this much later.
    package var maximumProducerSkew: Duration
    /// How long a worker's attempts may fail on a database that does not answer its probes
    /// before it leaves the consumer group, so that peers that reach Postgres take its
    /// partitions; it rejoins once Postgres answers. Zero: never leave.
    package var leaveGroupAfterDatabaseLoss: Duration

    package init(
        groupId: String = "checkin-evaluator", topics: Topics = Topics(), engine: EngineConfiguration = .init(),
        zoneRefreshInterval: Duration = .seconds(2), staleSweepInterval: Duration = .seconds(15),
        maximumBatchSize: Int = 2000, batchTimeout: Duration = .seconds(30), zoneLoadTimeout: Duration = .seconds(120),
        limits: InputLimits = InputLimits(), deviceStateRetention: Duration = .seconds(30 * 86_400),
        maximumProducerSkew: Duration = .seconds(10), leaveGroupAfterDatabaseLoss: Duration = .seconds(10)
    ) {
        self.groupId = groupId
        self.topics = topics
        self.engine = engine
        self.zoneRefreshInterval = zoneRefreshInterval
        self.staleSweepInterval = staleSweepInterval
        self.maximumBatchSize = maximumBatchSize
        self.batchTimeout = batchTimeout
        self.zoneLoadTimeout = zoneLoadTimeout
        self.limits = limits
        self.deviceStateRetention = deviceStateRetention
        self.maximumProducerSkew = maximumProducerSkew
        self.leaveGroupAfterDatabaseLoss = leaveGroupAfterDatabaseLoss
    }

    package init(environment: EnvironmentReader, topics: Topics) throws {
        let engine = EngineConfiguration(
            maxAccuracy: try environment.double(
                "CHECKIN_MAX_ACCURACY", default: 100, range: EngineConfiguration.maxAccuracyRange),
            exitBuffer: try environment.double("CHECKIN_EXIT_BUFFER", default: 20, range: EngineConfiguration.exitBufferRange),
            staleAfter: try environment.double("CHECKIN_STALE_AFTER", default: 7200, range: EngineConfiguration.staleAfterRange),
            maxCrossingGap: try environment.double(
                "CHECKIN_MAX_CROSSING_GAP", default: 600, range: EngineConfiguration.maxCrossingGapRange),
            beaconExitAfter: try environment.double(
                "CHECKIN_BEACON_EXIT_AFTER", default: 60, range: EngineConfiguration.beaconExitAfterRange),
            restartTolerance: try environment.double(
                "CHECKIN_RESTART_TOLERANCE", default: 50, range: EngineConfiguration.restartToleranceRange))
        self.init(
            groupId: environment.string("CHECKIN_EVALUATOR_GROUP", default: "checkin-evaluator"), topics: topics,
            engine: engine,
            zoneRefreshInterval: try environment.duration(
                "CHECKIN_ZONE_REFRESH_INTERVAL", default: .seconds(2), minimum: .milliseconds(100)),
            staleSweepInterval: try environment.duration(
                "CHECKIN_STALE_SWEEP_INTERVAL", default: .seconds(15), minimum: .milliseconds(100)),
            maximumBatchSize: try environment.int("CHECKIN_EVALUATOR_BATCH", default: 2000, range: 1...10_000),
            batchTimeout: try environment.duration("CHECKIN_EVALUATOR_BATCH_TIMEOUT", default: .seconds(30), minimum: .milliseconds(100)),
            zoneLoadTimeout: try environment.duration("CHECKIN_ZONE_LOAD_TIMEOUT", default: .seconds(120), minimum: .milliseconds(100)),
            limits: InputLimits(
                maxClockSkew: try environment.double(
                    InputLimits.maxClockSkewVariable, default: InputLimits.defaultMaxClockSkew,
                    range: InputLimits.maxClockSkewRange),
                ignoresUnknownFixMembers: try environment.bool(InputLimits.ignoreUnknownFixMembersVariable, default: false)),
            deviceStateRetention: try environment.duration("CHECKIN_DEVICE_STATE_RETENTION", default: .seconds(30 * 86_400)),
            maximumProducerSkew: try environment.duration("CHECKIN_MAX_PRODUCER_SKEW", default: .seconds(10)),
            leaveGroupAfterDatabaseLoss: try environment.duration(
                "CHECKIN_EVALUATOR_LEAVE_GROUP_AFTER", default: .seconds(10)))
        rebalanceLimit = try environment.duration("CHECKIN_KAFKA_REBALANCE_LIMIT", default: .seconds(60))
        recordDecisions = try environment.bool("CHECKIN_EVALUATOR_DECISIONS", default: true)
        decisionRetention = try environment.duration("CHECKIN_DECISION_RETENTION", default: .seconds(86_400))
        eventLogRetention = try environment.duration("CHECKIN_EVENT_LOG_RETENTION", default: .seconds(7 * 86_400))
        guard decisionRetention >= .seconds(86_400) else {
            throw ConfigurationError(
                variable: "CHECKIN_DECISION_RETENTION", value: "\(decisionRetention.seconds)",
                expected: "at least 86400 seconds (a device's last day of decisions is kept)")
        }
    }
}
