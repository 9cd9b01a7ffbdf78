import Logging
import NIOConcurrencyHelpers
import NIOCore
import ServiceLifecycle

/// A consumer-group member that reads its partitions in batches and commits
/// only what the application says it has processed (no auto-commit, no
/// auto offset store), so a crash replays unfinished work instead of losing it.
///
/// `run()` owns the poll thread; `batches` is how the application reads (one
/// reader). While the application has a few batches unread the consumer pauses
/// fetching but goes on polling, so a batch that takes long (a database away for a
/// while) costs neither the membership nor a rebalance of the others, as long as the
/// application says it is working (`noteProgress`). One that says nothing for half
/// `maxPollInterval` is taken as hung: polling stops and the group moves its partitions.
package final class KafkaConsumer: Service, Sendable {
    /// The handle in use: a new one after each move to another group.
    private let clients: NIOLockedValueBox<(client: RDKafkaClient, groupId: String)>
    private let configuration: KafkaConsumerConfiguration
    private let poller: ConsumerPoller
    private let state: NIOLockedValueBox<ConsumerStateMachine>
    private let gate: PollGate
    private let logger: Logger

    /// Batches of messages (each non-empty, at most `maxBatchSize`, per-partition order preserved),
    /// finished when the consumer has closed.
    package let batches: KafkaMessageBatches

    package init(
        configuration: KafkaConsumerConfiguration, rebalanceListener: (any KafkaRebalanceListener)? = nil, logger: Logger
    ) throws {
        var logger = logger
        logger[metadataKey: "kafka.group"] = "\(configuration.groupId)"
        logger[metadataKey: "kafka.client"] = "\(configuration.clientId)"
        let state = NIOLockedValueBox(ConsumerStateMachine())
        let gate = PollGate()
        let (batches, source) = KafkaMessageBatches.make(state: state, gate: gate)
        let poller = ConsumerPoller(
            configuration: configuration, listener: rebalanceListener, state: state, gate: gate,
            source: source, logger: logger)
        let client = try Self.makeClient(configuration: configuration, groupId: configuration.groupId, poller: poller, logger: logger)
        self.clients = NIOLockedValueBox((client, configuration.groupId))
        self.configuration = configuration
        self.poller = poller
        self.state = state
        self.gate = gate
        self.logger = logger
        self.batches = batches
    }

    /// Polls until graceful shutdown (or cancellation), then leaves the group
    /// (revoking through the listener) and finishes `batches`. Throws when the
    /// consumer stopped on an error (a fatal client error, a failing listener).
    package func run() async throws {
        try state.withLockedValue { $0.startRunning() }.get()
        let (poller, clients, configuration, logger) = (self.poller, self.clients, self.configuration, self.logger)
        await withTaskCancellationHandler {
            await withGracefulShutdownHandler {
                await PollThread.run(name: "kafka-consumer") {
                    var client = clients.withLockedValue { $0.client }
                    while let groupId = poller.run(client: client) {
                        do throws(KafkaError) {
                            client = try Self.makeClient(
                                configuration: configuration, groupId: groupId, poller: poller, logger: logger)
                        } catch {
                            poller.state.withLockedValue { $0.failed(error) }
                            poller.finish()
                            return
                        }
                        clients.withLockedValue { $0 = (client, groupId) }
                        logger.notice("moved to consumer group \(groupId)")
                    }
                }
            } onGracefulShutdown: {
                poller.gate.stop()
            }
        } onCancel: {
            poller.gate.stop()
        }
        if let failure = state.withLockedValue({ $0.failure }) { throw failure }
    }

    /// A handle for `groupId` whose messages, rebalances and logs the poller serves.
    private static func makeClient(
        configuration: KafkaConsumerConfiguration, groupId: String, poller: ConsumerPoller, logger: Logger
    ) throws(KafkaError) -> RDKafkaClient {
        var properties = configuration.librdkafkaProperties()
        properties["group.id"] = groupId
        // One queue for messages, rebalances and logs, all served by the poll thread.
        return try RDKafkaClient.makeConsumer(properties: properties, handler: poller, logger: logger)
    }

    /// The handle in use (a move to another group replaces it).
    var client: RDKafkaClient { clients.withLockedValue { $0.client } }

    /// The consumer group this member belongs to now (its configured one until a move).
    package var groupId: String { clients.withLockedValue { $0.groupId } }

    /// How long the rebalance under way has lasted; nil while the group is stable (or this
    /// member is out of it). A rebalance that never ends is a group its coordinator wedged.
    package var rebalanceInProgressFor: Duration? {
        poller.rebalanceStartedAt.withLockedValue { $0 }.map { ContinuousClock.now - $0 }
    }

    /// Whether this member has taken up an assignment since it started: before, records
    /// produced now wait for the group to form (seconds, on a first start).
    package var hasJoinedGroup: Bool {
        poller.assignmentsCompleted.withLockedValue { $0 } > 0
    }

    /// Leaves the current group and joins `groupId` instead, with a new handle. Partitions
    /// start at the listener's offsets, else at `offsets` in the new group's first assignment
    /// (the old group's commits, for instance), else at the new group's committed offsets
    /// or `autoOffsetReset`. For recovering from a group its coordinator wedged.
    package func moveToGroup(_ groupId: String, startingAt offsets: [KafkaTopicPartition: Int64] = [:]) {
        poller.requestedMove.withLockedValue { $0 = (groupId, offsets) }
        gate.nudge()
    }

    /// Asks for these offsets (each the NEXT offset to read: last processed + 1) to be
    /// committed to the group, and returns without waiting for the broker. librdkafka holds
    /// a commit back while the group rebalances; a caller waiting for it would stop taking
    /// batches, the poll that serves the rebalance would pause behind it, and neither would
    /// ever move. The outcome is not awaited: the next commit of the same partitions
    /// supersedes one that was lost, and closing the consumer waits for those in flight.
    /// With a `commitInterval`, the poll thread sends them, merged with those still waiting.
    package func commit(_ offsets: [KafkaTopicPartition: Int64]) throws {
        guard !offsets.isEmpty else { return }
        guard state.withLockedValue({ $0.lifecycle }) != .closed else { throw KafkaError.shutDown("commit") }
        if configuration.commitInterval != nil {
            poller.deferCommit(offsets)
            return
        }
        try client.commit(offsets, waiting: false)
    }

    /// Tells the consumer the application is working on what it took (an attempt started,
    /// a retry, an attempt still within its time limit). An application with enough batches
    /// keeps its membership only while it says so at least every half `maxPollInterval`.
    package func noteProgress() {
        poller.lastSignOfLife.withLockedValue { $0 = .now }
    }

    /// Leaves the group: the partitions are revoked through the listener and the group
    /// hands them to the other members; this member takes none until ``rejoinGroup()``.
    /// For a worker that cannot process what it would be given (a dependency of its own
    /// out of reach) while its peers can.
    package func leaveGroup() {
        poller.wantsMembership.withLockedValue { $0 = false }
        gate.nudge()
    }

    /// Joins the group again after ``leaveGroup()``.
    package func rejoinGroup() {
        poller.wantsMembership.withLockedValue { $0 = true }
        gate.nudge()
    }

    /// Whether this member means to be in the group (false between ``leaveGroup()`` and ``rejoinGroup()``).
    package var isInGroup: Bool {
        poller.wantsMembership.withLockedValue { $0 }
    }

    /// The partitions this member holds now (for metrics and tests).
    package var assignment: Set<KafkaTopicPartition> {
        state.withLockedValue { $0.assignment }
    }
}
