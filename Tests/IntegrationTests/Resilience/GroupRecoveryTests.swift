import AsyncHTTPClient
import Foundation
import KafkaTesting
import NIOCore
import Persistence
import Testing

/// A consumer group its coordinator wedged (the local broker keeps a member that left
/// mid-rebalance as the leader of every later generation, so nobody is ever assigned
/// anything) is detected and left for the group's next incarnation, and the fixes waiting
/// are evaluated.
@Suite(.serialized) struct GroupRecoveryTests {
    static let rebalanceLimit = 10

    @Test func groupWhoseLeaderLeftMidRebalanceIsRecovered() async throws {
        let cluster = try EvaluatorCluster()
        try await withCleanUp({ await cluster.stopAll() }) {
            cluster.environment["CHECKIN_KAFKA_REBALANCE_LIMIT"] =
                ProcessInfo.processInfo.environment["CHECKIN_TEST_REBALANCE_LIMIT"] ?? String(Self.rebalanceLimit)
            try await cluster.prepare()

            // Wedge the evaluators' group before any of them joins.
            let wedged = try await runScript(
                "scripts/lib/leave-mid-rebalance.py",
                [TestEnvironment.kafkaBrokers, cluster.harness.evaluatorGroup, cluster.harness.topics.fixes])
            #expect(wedged.status == 0, "\(wedged.output)")
            let departed = try #require(
                wedged.output.split(separator: "\n").first { $0.hasPrefix("first join:") }?.split(separator: " ").last.map(String.init))
            // The follower's answer names the member that had left as the leader: the group is wedged.
            #expect(
                wedged.output.contains("second join: error 0") && wedged.output.contains("leader \(departed), member"), "\(wedged.output)")

            let trips = (0..<8).map { TestTrip(projectId: cluster.harness.projectId, deviceId: "wedged-\($0)-\(cluster.harness.suffix)") }
            try await cluster.produce(trips.flatMap { trip in (0..<9).map(trip.fix) })
            let produced = trips.count * 9
            try cluster.startEvaluator()
            // A wedged group assigns the worker nothing: until it recovers, the worker says it is
            // not in a working group (the same answer as before a first join; the recovery below
            // is what tells the two apart).
            try await waitUntil("the wedged group reported by /ready", within: .seconds(40)) {
                await cluster.readiness(0)?.components["group"] == false
            }

            // Bound: the rebalance limit, then a join of the next incarnation (a few seconds here).
            do {
                try await waitUntil("the fixes evaluated in the group's next incarnation", within: .seconds(60)) {
                    try await cluster.query(
                        "SELECT coalesce(sum(next_offset), 0)::int8 FROM consumer_offsets WHERE consumer_group = '\(cluster.harness.evaluatorGroup)'"
                    ).first?.decode(Int64.self) == Int64(produced)
                }
            } catch {
                Issue.record("\(error)\n\(cluster.logs)")
                return
            }
            let incarnation = try await cluster.query(
                "SELECT incarnation FROM consumer_group_incarnations WHERE consumer_group = '\(cluster.harness.evaluatorGroup)'"
            ).first?.decode(Int.self)
            #expect(incarnation == 1)
            #expect(cluster.evaluators[0].log.contains("has not completed a rebalance"))
            let metrics = try await HTTPClient.shared.get(url: "http://127.0.0.1:\(cluster.ports[0])/metrics").get()
            let text = metrics.body.map { String(buffer: $0) } ?? ""
            #expect(text.contains("checkin_evaluator_group_recoveries_total 1"), "\(text.prefix(2000))")
            try await cluster.waitUntilReady(0, within: .seconds(30))
            let events = try await consumeEvents(of: trips[0].deviceId, count: 2, cluster.harness)
            #expect(events.map(\.type) == [.checkin, .checkout])
        }
    }
}

extension GroupRecoveryTests {
    /// The notifier's group wedged the same way: it moves on too, and the trip's webhooks arrive.
    @Test func notifierGroupWhoseLeaderLeftMidRebalanceIsRecovered() async throws {
        var configured = PipelineHarness()
        configured.configureNotifier = { $0.rebalanceLimit = .seconds(Self.rebalanceLimit) }
        let harness = configured
        let wedged = try await runScript(
            "scripts/lib/leave-mid-rebalance.py", [TestEnvironment.kafkaBrokers, harness.notifierGroup, harness.topics.checkIns])
        #expect(wedged.status == 0 && wedged.output.contains("second join: error 0"), "\(wedged.output)")
        try await harness.run { ingestPort, received in
            let trip = TestTrip(projectId: harness.projectId)
            #expect(
                try await post(try trip.batch(0..<9), to: "http://127.0.0.1:\(ingestPort)/v1/fixes", key: harness.deviceKey)
                    .status == 202)
            // The webhooks arrive once the notifier has moved to the group's next incarnation (the
            // incarnation is checked below: `/ready`'s `group: false` lasts only while the move is
            // under way, too short a window to be sure of seeing it).
            try await received.wait(timeout: .seconds(90)) { trip.isComplete($0) }
        }
        let (group, logger) = (harness.notifierGroup, harness.logger)
        let incarnation = try await Database.withTemporaryClient(configuration: try harness.databaseConfiguration(), logger: logger) {
            try await ConsumerGroupStore(database: $0, logger: logger).incarnation(of: group)
        }
        #expect(incarnation == 1)
    }
}

/// Runs one of the repository's scripts with python3; its exit status and output.
func runScript(_ path: String, _ arguments: [String]) async throws -> (status: Int32, output: String) {
    let outcome = try await CommandOutcome.run(
        executable: URL(fileURLWithPath: "/usr/bin/python3"),
        arguments: [PrivatePostgres.repositoryRoot.appendingPathComponent(path).path] + arguments)
    return (outcome.exitCode, outcome.standardOutput + outcome.standardError)
}
