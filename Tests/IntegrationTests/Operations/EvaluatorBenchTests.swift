import Foundation
import Testing

/// `checkin bench evaluator` as an operator runs it, on a small world: its figures come
/// from a real evaluator process that evaluated the backlog and decided events.
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
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let out = directory.appendingPathComponent("out")
        let err = directory.appendingPathComponent("err")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        _ = FileManager.default.createFile(atPath: err.path, contents: nil)
        let process = Process()
        process.executableURL = try ServiceProcess.executable()
        // 100 devices x 200 fixes: each walks a leg through a fence and starts another, so that
        // check-ins and check-outs are decided; ten batches or more, so there is a window to time.
        process.arguments = [
            "bench", "evaluator", "--fixes", "20000", "--devices", "100", "--fences", "200", "--side-km", "20",
            "--first-port", "\(try freePort())", "--timeout", "120", "--json",
        ]
        process.environment = ProcessInfo.processInfo.environment.merging([
            "CHECKIN_KAFKA_SESSION_TIMEOUT_MS": "6000", "CHECKIN_KAFKA_HEARTBEAT_INTERVAL_MS": "1000",
            "CHECKIN_KAFKA_MAX_POLL_INTERVAL_MS": "10000",
        ]) { $1 }
        process.standardOutput = try FileHandle(forWritingTo: out)
        process.standardError = try FileHandle(forWritingTo: err)
        let code: Int32 = try await withCheckedThrowingContinuation { continuation in
            process.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
            do {
                try process.run()
            } catch {
                process.terminationHandler = nil
                continuation.resume(throwing: error)
            }
        }
        let printed = try String(contentsOf: out, encoding: .utf8)
        let logged = try String(contentsOf: err, encoding: .utf8)
        try #require(code == 0, "exit \(code)\n\(printed)\n\(logged)")
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
