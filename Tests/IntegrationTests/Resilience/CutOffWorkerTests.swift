import Foundation
import Shared
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A worker cut off from Postgres while its peer is not hands its partitions to the peer
/// instead of retrying on them for as long as the cut lasts, and takes its share back once
/// it reaches Postgres again.
@Suite(.serialized) struct CutOffWorkerTests {
    /// How long the test lets a worker's attempts fail before it leaves (the default is 10 s).
    static let leaveAfter = 5

    @Test func workerCutOffFromPostgresHandsItsPartitionsToItsPeer() async throws {
        let cluster = try EvaluatorCluster()
        try await withCleanUp({ await cluster.stopAll() }) {
            cluster.environment["CHECKIN_EVALUATOR_LEAVE_GROUP_AFTER"] =
                ProcessInfo.processInfo.environment["CHECKIN_TEST_LEAVE_GROUP_AFTER"] ?? String(Self.leaveAfter)
            try await cluster.prepare()
            try cluster.startEvaluator()
            // The second worker runs as a user of its own, so that a firewall rule cuts its traffic alone.
            try cluster.startEvaluator(user: "nobody")
            for index in 0..<2 { try await cluster.waitUntilReady(index) }
            try await waitUntil("both workers hold partitions", within: .seconds(40)) {
                try await cluster.query("SELECT count(DISTINCT owner) FROM partition_epochs").first?.decode(Int.self) == 2
            }

            let port = try #require(Int(cluster.postgres.url.split(separator: ":").last?.split(separator: "/").first ?? ""))
            let cut = try FirewallRule.rejectingTCP(toPort: port, fromUser: "nobody")
            var healed = false
            defer { if !healed { cut.remove() } }

            // Fixes for devices on every partition, produced after the cut.
            let trips = (0..<24).map { TestTrip(projectId: cluster.harness.projectId, deviceId: "cut-\($0)-\(cluster.harness.suffix)") }
            try await cluster.produce(trips.flatMap { trip in (0..<5).map(trip.fix) })
            let produced = trips.count * 5
            let cutAt = ContinuousClock.now

            // Bound: the attempts' first failures are seen within 5 s, the worker leaves after
            // `leaveAfter` more, the group rebalances within its session time-out (6 s here),
            // and the peer decides the waiting batches: well inside 60 s.
            do {
                try await waitUntil("every fix produced after the cut evaluated", within: .seconds(60)) {
                    try await processed(cluster) == Int64(produced)
                }
            } catch {
                Issue.record("\(error)\n\(try await cluster.activity())\n\(cluster.logs)")
                return
            }
            let took = ContinuousClock.now - cutAt
            cluster.logger.info("fixes produced after the cut evaluated by the peer", metadata: ["after": "\(took)"])
            let cutOff = await cluster.readiness(1)
            #expect(cutOff?.status == 503)
            #expect(cutOff?.components["group"] == false, "\(String(describing: cutOff))")
            #expect(cluster.evaluators[1].log.contains("leaving the consumer group"))
            let peer = try #require(cluster.evaluators[0].processIdentifier)
            let owners = try await cluster.query("SELECT DISTINCT owner FROM partition_epochs").map { try $0.decode(String.self) }
            #expect(owners.count == 1 && owners.allSatisfy { $0.contains(":\(peer):") }, "\(owners)")

            // Healed: the worker finds Postgres again, rejoins and takes its share back.
            cut.remove()
            healed = true
            try await cluster.waitUntilReady(1, within: .seconds(60))
            try await waitUntil("both workers hold partitions again", within: .seconds(60)) {
                try await cluster.query("SELECT count(DISTINCT owner) FROM partition_epochs").first?.decode(Int.self) == 2
            }
            let more = (0..<24).map { TestTrip(projectId: cluster.harness.projectId, deviceId: "back-\($0)-\(cluster.harness.suffix)") }
            try await cluster.produce(more.flatMap { trip in (0..<5).map(trip.fix) })
            try await waitUntil("every fix produced after the heal evaluated", within: .seconds(60)) {
                try await processed(cluster) == Int64(produced + more.count * 5)
            }
        }
    }

    func processed(_ cluster: EvaluatorCluster) async throws -> Int64? {
        try await cluster.query(
            "SELECT coalesce(sum(next_offset), 0)::int8 FROM consumer_offsets WHERE consumer_group = '\(cluster.harness.evaluatorGroup)'"
        ).first?.decode(Int64.self)
    }
}

/// An iptables rule for the length of a test: the loopback TCP traffic of one user's
/// processes to one port is refused (reset), as when a worker's path to its database breaks.
struct FirewallRule: Sendable {
    let specification: [String]

    static func rejectingTCP(toPort port: Int, fromUser user: String) throws -> FirewallRule {
        var specification = [
            "OUTPUT", "-o", "lo", "-p", "tcp", "--dport", String(port), "-m", "owner", "--uid-owner", user,
        ]
        // Named for the run (scripts/with-services.sh), which deletes it if the test could not.
        if let run = ProcessInfo.processInfo.environment["CHECKIN_TEST_RUN"] {
            specification += ["-m", "comment", "--comment", "checkin-test-run \(run)"]
        }
        let rule = FirewallRule(specification: specification + ["-j", "REJECT", "--reject-with", "tcp-reset"])
        let status = try Self.iptables(["-I"] + rule.specification)
        guard status == 0 else {
            throw TestFailure("iptables could not add the rule (exit \(status)); this test needs root and iptables")
        }
        return rule
    }

    func remove() {
        _ = try? Self.iptables(["-D"] + specification)
    }

    private static func iptables(_ arguments: [String]) throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/iptables")
        process.arguments = arguments
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus
    }
}
