import Dispatch
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore

/// Everything that runs on the consumer's poll thread: polling, batching,
/// the rebalances (served inside a poll) and the final close. Also the
/// handle's callback context.
final class ConsumerPoller: RDKafkaRebalanceHandler, @unchecked Sendable {
    /// `@unchecked`: `collected`, `localGenerations`, `fetchingPaused`, `subscribed` and the
    /// pending assignments are only touched on the poll thread.
    let logger: Logger
    let state: NIOLockedValueBox<ConsumerStateMachine>
    let gate: PollGate
    private let source: KafkaMessageBatches.Wrapped.Source
    let listener: (any KafkaRebalanceListener)?
    private let topics: [String]
    private let maxBatchSize: Int
    private let maxBatchBytes: Int
    /// The most bytes `collected` may hold: librdkafka's queue (a quarter of `bufferBytes`),
    /// taken whole at a pause, on top of less than a batch, below which fetching resumes.
    private let maxKeptBytes: Int
    var collected = CollectedRecords()
    var localGenerations: [KafkaTopicPartition: UInt64] = [:]
    /// Whether fetching is paused because the application has enough batches.
    var fetchingPaused = false
    var hungReported = false
    /// Partitions the group assigned whose listener has not returned yet, by assignment round.
    var pendingAssignments: [Int: PendingAssignment] = [:]
    var assignmentRound = 0
    /// What listeners returned, for the poll thread to act on.
    let listenerResults = NIOLockedValueBox<[ListenerResult]>([])

    struct PendingAssignment {
        var partitions: [KafkaTopicPartition]
        var cooperative: Bool
    }

    struct ListenerResult: Sendable {
        var round: Int
        var partitions: [KafkaTopicPartition]
        var offsets: Result<[KafkaTopicPartition: Int64], any Error>
    }
    /// How long the application may have enough batches before fetching pauses: well
    /// below any `max.poll.interval`, well above the pauses of a busy pipeline.
    static let pauseAfter = Duration.seconds(1)

    /// How long an application with enough batches may give no sign of life before the
    /// poll stops, so that the group takes the partitions of a worker hung in a batch.
    let quietLimit: Duration
    /// When the application last showed it is working (`KafkaConsumer.noteProgress`).
    let lastSignOfLife = NIOLockedValueBox(ContinuousClock.now)
    /// Whether the application wants this member in the group (`KafkaConsumer.leaveGroup()`
    /// and `rejoinGroup()`); the poll thread subscribes or unsubscribes to match.
    let wantsMembership = NIOLockedValueBox(true)
    /// Whether this member is subscribed now.
    var subscribed = false
    /// A group this member was asked to move to (`KafkaConsumer.moveToGroup`), with the
    /// offsets to start its partitions at where the new group has none.
    let requestedMove = NIOLockedValueBox<(groupId: String, offsets: [KafkaTopicPartition: Int64])?>(nil)
    /// Where partitions start when neither the listener nor the group gives an offset:
    /// what the previous group had committed, after a move.
    var carriedOffsets: [KafkaTopicPartition: Int64] = [:]
    /// When the rebalance under way began (the subscription, or the revocation that
    /// opened it); nil while the group is stable or this member is out of it.
    let rebalanceStartedAt = NIOLockedValueBox<ContinuousClock.Instant?>(nil)
    /// How many assignments (each a completed rebalance, possibly with no partitions) this
    /// member has taken up, its listener done and the partitions fetched from.
    let assignmentsCompleted = NIOLockedValueBox(0)
    /// At most how often deferred commits go to the group; nil: the application commits at once.
    let commitInterval: Duration?
    /// Offsets handed to `KafkaConsumer.commit` and not sent yet, the latest of each partition.
    let deferredCommits = NIOLockedValueBox<[KafkaTopicPartition: Int64]>([:])
    /// When deferred commits were last sent (poll thread only).
    var lastCommitSent = ContinuousClock.now

    init(
        configuration: KafkaConsumerConfiguration, listener: (any KafkaRebalanceListener)?,
        state: NIOLockedValueBox<ConsumerStateMachine>, gate: PollGate, source: KafkaMessageBatches.Wrapped.Source,
        logger: Logger
    ) {
        // librdkafka's default poll interval is 300 s.
        self.quietLimit = (configuration.maxPollInterval ?? .seconds(300)) / 2
        self.logger = logger
        self.state = state
        self.gate = gate
        self.source = source
        self.listener = listener
        self.topics = configuration.topics
        self.maxBatchSize = max(1, configuration.maxBatchSize)
        self.maxBatchBytes = configuration.maxBatchBytes
        self.maxKeptBytes = configuration.bufferBytes.map { $0 / 4 + $0 / 8 } ?? .max
        self.commitInterval = configuration.commitInterval
    }

    /// Keeps offsets for the next commit the poll thread sends (`sendDeferredCommits`).
    func deferCommit(_ offsets: [KafkaTopicPartition: Int64]) {
        deferredCommits.withLockedValue { waiting in
            waiting.merge(offsets) { max($0, $1) }
        }
    }

    /// Sends the deferred commits once `commitInterval` has passed since the last, or now with
    /// `immediately` (partitions about to be revoked, the group left, the consumer closed), then
    /// waiting for the broker's answer. The local broker takes them at revocation; a group that
    /// is already rebalancing may refuse them (librdkafka's mock cluster answers
    /// REBALANCE_IN_PROGRESS): the partitions' next owner then starts up to an interval earlier
    /// and sees those records again (at least once, never skipped).
    func sendDeferredCommits(client: RDKafkaClient, immediately: Bool = false) {
        guard let commitInterval, immediately || ContinuousClock.now - lastCommitSent >= commitInterval else { return }
        let offsets = deferredCommits.withLockedValue { waiting in
            defer { waiting = [:] }
            return waiting
        }
        lastCommitSent = .now
        guard !offsets.isEmpty else { return }
        do {
            try client.commit(offsets, waiting: immediately)
        } catch {
            // Not lost: the next commit of the same partitions supersedes it.
            logger.debug("could not commit offsets to the group", metadata: ["error": "\(error)"])
        }
    }

    /// The poll loop of one handle. Returns the group to move to when asked to (the handle
    /// has left its group and is closed; the caller makes the next one), nil once the
    /// consumer has stopped (closed, batches finished).
    func run(client: RDKafkaClient) -> String? {
        var move: String?
        if matchMembership(client: client) { move = pollUntilStoppedOrMoved(client: client) }
        sendDeferredCommits(client: client, immediately: true)
        // Leaves the group; the final revoke runs the rebalance callback here, on this thread.
        do {
            try client.closeConsumer()
        } catch {
            logger.warning("\(error)")
        }
        subscribed = false
        rebalanceStartedAt.withLockedValue { $0 = nil }
        if let move { return move }
        finish()
        return nil
    }

    /// Marks the consumer closed and finishes its batches (with its failure, if any).
    func finish() {
        let failure = state.withLockedValue { state in
            state.closed()
            return state.failure
        }
        if let failure { source.finish(failure) } else { source.finish() }
    }

    /// Subscribes or unsubscribes as the application wants. Leaving revokes the assignment
    /// through the rebalance callback on a later poll, so the listener lets go as in any
    /// rebalance and the group hands the partitions to the other members. False when the
    /// subscription failed: the consumer stops.
    private func matchMembership(client: RDKafkaClient) -> Bool {
        let wanted = wantsMembership.withLockedValue { $0 }
        guard wanted != subscribed else { return true }
        if wanted {
            do {
                try client.subscribe(topics)
            } catch {
                state.withLockedValue { $0.failed(error) }
                return false
            }
            logger.debug("subscribed", metadata: ["topics": "\(topics)"])
            rebalanceStartedAt.withLockedValue { $0 = .now }
        } else {
            do {
                try client.unsubscribe()
            } catch {
                logger.error("\(error)")
                return true
            }
            logger.debug("unsubscribed", metadata: ["topics": "\(topics)"])
            rebalanceStartedAt.withLockedValue { $0 = nil }
        }
        subscribed = wanted
        return true
    }

    private func pollUntilStoppedOrMoved(client: RDKafkaClient) -> String? {
        while true {
            sendDeferredCommits(client: client)
            guard startAssigned(client: client), matchMembership(client: client) else { return nil }
            if let move = requestedMove.withLockedValue({ request in
                defer { request = nil }
                return request
            }) {
                carriedOffsets = move.offsets
                // The next handle fetches from scratch; it pauses again if the application is still busy.
                fetchingPaused = false
                return move.groupId
            }
            // A short wait for the application keeps what was fetched ahead; a long one pauses.
            switch gate.waitForDemand(upTo: fetchingPaused ? .milliseconds(100) : Self.pauseAfter) {
            case .stopped:
                return nil
            case .satisfied:
                // The application has had enough batches for a while. Fetching stops, but the
                // group is still served (rebalances, the poll interval), so a slow batch never
                // costs the membership, as long as the application shows it is working; one
                // hung in a batch lets the poll lapse.
                if !fetchingPaused { keepFetchedAhead(client: client) }
                setFetchingPaused(true, client: client)
                let quiet = ContinuousClock.now - lastSignOfLife.withLockedValue { $0 }
                if quiet > quietLimit {
                    if !hungReported {
                        hungReported = true
                        logger.error(
                            "the application shows no sign of life; polling stops so that the group moves its partitions",
                            metadata: ["quietFor": "\(quiet)"])
                    }
                    continue
                }
                hungReported = false
                if let polled = client.poll(timeoutMilliseconds: 0) { take(polled, client: client) }
                if state.withLockedValue({ $0.failure != nil }) { return nil }
                continue
            case .nudged:
                continue
            case .wanted:
                // Records kept at a pause go out first; fetching resumes once less than a batch
                // is kept, so that what it fetches is neither dropped at the next pause nor piled
                // on what is kept.
                if collected.count < maxBatchSize && collected.bytes < maxBatchBytes {
                    setFetchingPaused(false, client: client)
                }
                lastSignOfLife.withLockedValue { $0 = .now }
            }
            // The first poll waits a little for data; the rest take what is already there. It
            // polls even with a batch's worth kept from before a pause, so that a revocation
            // waiting meanwhile (the poll lapsed) drops those records before any goes out.
            var timeout: Int32 = collected.isEmpty ? 100 : 0
            var polled = false
            while !polled || (collected.count < maxBatchSize && collected.bytes < maxBatchBytes),
                let message = client.poll(timeoutMilliseconds: timeout)
            {
                polled = true
                timeout = 0
                take(message, client: client)
            }
            if state.withLockedValue({ $0.failure != nil }) { return nil }
            guard !collected.isEmpty else { continue }
            // Messages taken while fetching was paused may make more than a batch; the rest waits.
            let messages = collected.takeBatch(maxCount: maxBatchSize, maxBytes: maxBatchBytes)
            var generations: [KafkaTopicPartition: UInt64] = [:]
            for message in messages {
                let partition = message.topicPartition
                if generations[partition] == nil { generations[partition] = localGenerations[partition] ?? 0 }
            }
            let batch = PolledBatch(messages: messages, generations: generations)
            // Demand is switched off before the yield and back on when the
            // sequence says so, so a produceMore() racing the yield is never lost.
            gate.setDemand(false)
            switch source.yield(contentsOf: CollectionOfOne(batch)) {
            case .produceMore: gate.setDemand(true)
            case .stopProducing: break
            case .dropped: gate.setDemand(false)
            }
        }
    }

    /// Takes what librdkafka has fetched ahead before fetching pauses, which would drop it.
    /// A broker answers a fetch with one partition's records after another's; dropped at
    /// every pause, those of the partitions behind the first would be fetched and dropped
    /// again for as long as the first has a batch's worth waiting, and not read. Kept, they
    /// go out merged by record time (`CollectedRecords`). Fetching goes on until the pause,
    /// so the taking stops at `maxKeptBytes` and 64 batches' records.
    private func keepFetchedAhead(client: RDKafkaClient) {
        while collected.count < 64 * maxBatchSize, collected.bytes < maxKeptBytes,
            let message = client.poll(timeoutMilliseconds: 0)
        {
            take(message, client: client)
        }
    }

    /// Keeps a polled record for the next batch, or handles the error polled instead.
    private func take(_ polled: RDKafkaPolled, client: RDKafkaClient) {
        switch polled {
        case .record(let message):
            collected.append(message)
            // A partition assigned while fetching was paused starts fetching; it waits with the others.
            if fetchingPaused { client.pauseAssignment() }
        case .endOfPartition:
            break
        case .error(let code, let reason):
            handleError(code, reason: reason, client: client)
        }
    }

    /// Pauses or resumes fetching of the whole assignment. librdkafka drops what it
    /// fetched ahead for a paused partition and fetches again from the position after
    /// the last message handed to this poller, so nothing is skipped or repeated.
    private func setFetchingPaused(_ paused: Bool, client: RDKafkaClient) {
        guard paused != fetchingPaused else { return }
        fetchingPaused = paused
        if paused { client.pauseAssignment() } else { client.resumeAssignment() }
    }

    private func handleError(_ code: KafkaError.Code, reason: String, client: RDKafkaClient) {
        if code == .fatal {
            let fatal = client.fatalError() ?? KafkaError("fatal consumer error", code: code, reason: reason)
            logger.error("\(fatal)")
            state.withLockedValue { $0.failed(fatal) }
            gate.stop()
        } else {
            logger.warning("consumer: \(code): \(reason)")
        }
    }
}
