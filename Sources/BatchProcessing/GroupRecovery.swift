import Kafka
import Logging
import Metrics
import Persistence
import ServiceLifecycle
import ServiceSupport

/// Gets a consumer out of a group whose rebalance never completes.
///
/// A group coordinator can wedge a group for good: the embedded local broker keeps a
/// member that left in the middle of a rebalance as the leader of every later generation,
/// so no member is ever given an assignment, and no timeout or rejoin under the same group
/// id clears it. So when this member's rebalance has gone on for `stuckAfter`, it moves the
/// group on to its next incarnation in Postgres (`<group>~<n>`, once for all members) and
/// joins that group, starting from what the old one had committed; every `checkEvery` it
/// also follows a move another member made. `/ready` says `group: false` until the member
/// first joins its group and while a rebalance is overdue; `checkin_<service>_group_recoveries_total` counts the moves.
package final class GroupRecovery: Service, Sendable {
    let consumer: KafkaConsumer
    /// The configured group id: incarnation 0.
    let group: String
    let groups: ConsumerGroupStore
    let stuckAfter: Duration
    let checkEvery: Duration
    /// The old group's committed offsets, for the new group's first assignment (empty when
    /// the application keeps its offsets itself and gives them to its rebalance listener).
    let committedOffsets: @Sendable (_ groupId: String) async -> [KafkaTopicPartition: Int64]
    let readiness: Readiness?
    let logger: Logger
    let recoveries: Counter

    /// One per service: `checkin dev` runs the evaluator's and the notifier's in one process,
    /// and `group` is ready only when both members are.
    let readinessSource: String

    package init(
        service: String, consumer: KafkaConsumer, group: String, groups: ConsumerGroupStore, stuckAfter: Duration,
        checkEvery: Duration = .seconds(5), readiness: Readiness?, logger: Logger,
        committedOffsets: @escaping @Sendable (_ groupId: String) async -> [KafkaTopicPartition: Int64] = { _ in [:] }
    ) {
        self.consumer = consumer
        self.group = group
        self.groups = groups
        self.stuckAfter = stuckAfter
        self.checkEvery = checkEvery
        self.committedOffsets = committedOffsets
        self.readiness = readiness
        self.logger = logger
        self.readinessSource = "\(service) rebalance"
        self.recoveries = Counter(label: "checkin_\(service)_group_recoveries_total")
        recoveries.increment(by: 0)
        // Not ready until the member has joined its group: records sent before would wait for it.
        readiness?.set("group", ready: false, source: readinessSource)
    }

    /// The Kafka group id of an incarnation.
    package static func groupId(_ group: String, incarnation: Int) -> String {
        incarnation == 0 ? group : "\(group)~\(incarnation)"
    }

    /// What one look leaves for the next.
    struct Progress: Sendable {
        var incarnation: Int?
        var lastCheck: ContinuousClock.Instant?
        /// From an overdue rebalance until the member is assigned in the group it moved to.
        var recovering = false
    }

    package func run() async throws {
        var progress = Progress()
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            // A query waiting on an unreachable database must not hold up a shutdown.
            do {
                progress = try await cancelWhenGracefulShutdown { [progress] in try await self.check(progress) }
            } catch {
                if Task.isShuttingDownGracefully || Task.isCancelled { return }
                logger.warning("could not read the consumer group's incarnation", metadata: ["error": "\(error)"])
            }
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(1)) }
        }
    }

    /// One look: follows a move made elsewhere (every `checkEvery`), moves on from an overdue rebalance.
    private func check(_ progress: Progress) async throws -> Progress {
        var progress = progress
        if progress.lastCheck.map({ ContinuousClock.now - $0 >= checkEvery }) ?? true {
            progress.lastCheck = .now
            let current = try await groups.incarnation(of: group)
            progress.incarnation = current
            await follow(incarnation: current)
        }
        // Judged only in the group of the incarnation known (a move not made yet restarts the clock).
        let inKnownGroup = progress.incarnation.map { consumer.groupId == Self.groupId(group, incarnation: $0) } ?? false
        if let seen = progress.incarnation, inKnownGroup, let stuck = consumer.rebalanceInProgressFor, stuck >= stuckAfter {
            progress.recovering = true
            readiness?.set("group", ready: false, source: readinessSource)
            logger.error(
                "the consumer group has not completed a rebalance; moving to its next incarnation",
                metadata: ["group": "\(consumer.groupId)", "rebalancingFor": "\(stuck)"])
            let next = try await groups.advance(group, from: seen)
            progress.incarnation = next
            recoveries.increment()
            await follow(incarnation: next)
        } else if consumer.hasJoinedGroup,
            !progress.recovering || (inKnownGroup && consumer.rebalanceInProgressFor == nil)
        {
            progress.recovering = false
            readiness?.set("group", ready: true, source: readinessSource)
        }
        return progress
    }

    /// Joins the incarnation's group unless the consumer is in it already.
    private func follow(incarnation: Int) async {
        let target = Self.groupId(group, incarnation: incarnation)
        let current = consumer.groupId
        guard target != current else { return }
        let offsets = await committedOffsets(current)
        logger.notice(
            "joining the consumer group's incarnation \(incarnation)",
            metadata: ["from": "\(current)", "to": "\(target)", "carriedOffsets": "\(offsets.count)"])
        consumer.moveToGroup(target, startingAt: offsets)
    }
}
