import Foundation
import Logging
import Testing

/// `checkin-bench evaluator` as an operator runs it, on a small world: its figures come
/// from a real `checkin evaluator` process that evaluated the backlog and decided events.
@Suite struct EvaluatorBenchTests {
    struct Summary: Decodable {
        struct Window: Decodable {
            var fixes: Int64
            var fixesPerSecond: Double
            var eventsPer100Fixes: Double
            var walBytesPerFix: Double
            var batches: Double
        }

        struct Conditions: Decodable {
            var fsync: String
            var synchronousCommit: String
        }

        var fixes: Int
        var evaluators: Int
        var conditions: Conditions
        var window: Window
    }

    @Test func aSmallWorldsBacklogIsEvaluatedAndDecidesEvents() async throws {
        // 100 devices x 200 fixes: each walks a leg through a fence and starts another, so that
        // check-ins and check-outs are decided; ten batches or more, so there is a window to time.
        let outcome = try await CommandOutcome.runBench(
            [
                "evaluator", "--fixes", "20000", "--devices", "100", "--fences", "200", "--side-km", "20",
                "--first-port", "\(try freePort())", "--timeout", "120", "--json",
            ],
            environment: [
                // A database of its own: webhook secrets other tests seal under keys of their own
                // would stop the evaluator at start, as they should in a deployment.
                "CHECKIN_DATABASE_URL": try await freshDatabaseURL(logger: Logger(label: "test.bench")),
                "CHECKIN_KAFKA_SESSION_TIMEOUT_MS": "6000", "CHECKIN_KAFKA_HEARTBEAT_INTERVAL_MS": "1000",
                "CHECKIN_KAFKA_MAX_POLL_INTERVAL_MS": "10000",
            ])
        let printed = outcome.standardOutput
        try #require(outcome.exitCode == 0, "exit \(outcome.exitCode)\n\(printed)\n\(outcome.standardError)")
        let summary = try JSONDecoder().decode(Summary.self, from: Data(printed.utf8))
        #expect(summary.fixes == 20_000 && summary.evaluators == 1)
        // The window runs from the first reading past 10 % of the backlog's committed offsets to
        // the first past 90 %; offsets move a batch (up to 2,000 fixes) at a time.
        #expect(summary.window.fixes > 0 && summary.window.fixes <= 20_000)
        #expect(summary.window.fixesPerSecond > 0)
        #expect(summary.window.batches >= 1)
        #expect(summary.window.walBytesPerFix > 0)
        #expect(summary.window.eventsPer100Fixes > 0, "the walks decided no event: \(printed)")
        #expect(summary.conditions.fsync == "off" || summary.conditions.fsync == "on")
    }
}
