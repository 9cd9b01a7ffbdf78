import Foundation
import Persistence
import PostgresNIO
import ServiceSupport
import Testing

/// While Postgres fails the evaluator's batches, the worker retries them (nothing is
/// skipped), says so on `/ready`, and reports the partition it cannot move; once the
/// database is back everything is decided.
@Suite(.serialized) struct TransientFailureTests {
    @Test func failingDatabaseIsRetriedReportedAndRecoveredFrom() async throws {
        let harness = PipelineHarness()
        let logger = harness.logger
        // Insufficient resources (SQLSTATE 53300), raised for this test's group only.
        let refusal = OffsetCommitRefusal(group: harness.evaluatorGroup, sqlState: "53300")
        try await Database.withTemporaryClient(configuration: try harness.databaseConfiguration(), logger: logger) { database in
            try await Migrator(database: database, logger: logger).migrate()
        }
        try await harness.execute(refusal.create)
        @Sendable func dropTrigger() async throws { try await harness.execute(refusal.drop) }
        do {
            try await harness.run { ingestPort, received in
                let trip = TestTrip(projectId: harness.projectId)
                let url = "http://127.0.0.1:\(ingestPort)/v1/fixes"
                #expect(try await post(try trip.batch(0..<9), to: url, key: harness.deviceKey).status == 202)

                try await waitUntil("the database reported not ready", within: .seconds(30)) {
                    harness.readiness.report["database"] == false
                }
                #expect(!harness.readiness.isReady)
                // Past max.poll.interval (10 s in the harness) with records waiting: a stalled partition.
                try await waitUntil("a stalled partition reported", within: .seconds(40)) {
                    harness.readiness.report["partitions"] == false
                }
                #expect(metricValue("checkin_evaluator_transient_failures_total", labels: #"component="database""#) ?? 0 >= 1)
                // Nothing was committed meanwhile: the device's state is not there yet.
                let stored = try await Database.withTemporaryClient(
                    configuration: try harness.databaseConfiguration(), logger: logger
                ) { database in
                    try await database.withTransaction { connection in
                        try await DeviceStateStore(logger: logger).lockStates(
                            [DeviceKey(projectId: trip.projectId, deviceId: trip.deviceId)], on: connection)
                    }
                }
                #expect(stored.isEmpty)

                try await dropTrigger()
                try await received.wait(timeout: .seconds(60)) { trip.isComplete($0) }
                try await waitUntil("ready again", within: .seconds(30)) {
                    harness.readiness.report["database"] == true && harness.readiness.report["partitions"] == true
                }
            }
        } catch {
            try await dropTrigger()
            throw error
        }
        try await dropTrigger()
    }
}

/// Polls `condition` every 100 ms until it holds, failing after `timeout`.
func waitUntil(_ what: String, within timeout: Duration, _ condition: @Sendable () async throws -> Bool) async throws {
    let deadline = ContinuousClock.now + timeout
    while try await !condition() {
        if ContinuousClock.now > deadline { throw TestFailure("timed out waiting: \(what)") }
        try await Task.sleep(for: .milliseconds(100))
    }
}

/// A sample of this process's Prometheus registry (the largest, when several series match).
func metricValue(_ name: String, labels: String? = nil) -> Double? {
    let lines = MetricsBootstrap.prometheus().emitToString().split(separator: "\n")
    let values = lines.compactMap { line -> Double? in
        guard line.hasPrefix(name + " ") || line.hasPrefix(name + "{") else { return nil }
        if let labels, !line.contains(labels) { return nil }
        return Double(line.split(separator: " ").last ?? "")
    }
    return values.max()
}
