import Foundation
import Persistence
import PostgresNIO
import Shared
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A worker that cannot evaluate holds no partitions and says so; a worker asked to
/// stop stops, even with Postgres gone; nothing it had not committed is lost.
@Suite(.serialized) struct LivenessTests {
    /// Zones that cannot be loaded: not ready, no partitions taken (the other worker keeps
    /// them all and decides everything), SIGTERM honoured; once they load, it joins.
    @Test func workerWhoseZonesCannotLoadTakesNoPartitions() async throws {
        let cluster = try EvaluatorCluster()
        try await withCleanUp({ await cluster.stopAll() }) {
            try await cluster.prepare()
            try cluster.startEvaluator()
            try await cluster.waitUntilReady(0)
            try await waitUntil("the first worker holds the partitions", within: .seconds(30)) {
                try await cluster.query("SELECT count(*) FROM partition_epochs").first?.decode(Int.self) == 4
            }

            // Zone loads fail from now on; the running worker keeps the engine it has.
            _ = try await cluster.query("ALTER TABLE fences RENAME TO fences_away")
            try cluster.startEvaluator()
            try await Task.sleep(for: .seconds(10))
            let second = await cluster.readiness(1)
            #expect(second?.status == 503)
            #expect(second?.components["zones"] == false)
            let owners = try await cluster.query("SELECT count(DISTINCT owner) FROM partition_epochs").first?.decode(Int.self)
            #expect(owners == 1)

            let trip = TestTrip(projectId: cluster.harness.projectId)
            try await cluster.produce((0..<9).map(trip.fix))
            let events = try await consumeEvents(of: trip.deviceId, count: 2, cluster.harness)
            #expect(events.map(\.type) == [.checkin, .checkout])

            let stopped = await cluster.evaluators[1].terminate(within: 30)
            #expect(stopped.map { $0 < 5 } == true, "SIGTERM took \(String(describing: stopped)) s")

            _ = try await cluster.query("ALTER TABLE fences_away RENAME TO fences")
            try cluster.restart(1)
            try await cluster.waitUntilReady(1)
            try await waitUntil("both workers hold partitions", within: .seconds(40)) {
                try await cluster.query("SELECT count(DISTINCT owner) FROM partition_epochs").first?.decode(Int.self) == 2
            }
        }
    }

    /// Postgres goes away with a batch in flight: the worker retries it, reports the
    /// database not ready, and a SIGTERM still ends it within the grace period. After
    /// Postgres and the worker come back, the batch is decided: nothing was lost.
    @Test func sigtermEndsAWorkerWhilePostgresIsDown() async throws {
        let cluster = try EvaluatorCluster()
        try await withCleanUp({ await cluster.stopAll() }) {
            try await cluster.prepare()
            try cluster.startEvaluator()
            try await cluster.waitUntilReady(0)
            try await Task.sleep(for: .seconds(4))

            try await cluster.postgres.stop()
            let trip = TestTrip(projectId: cluster.harness.projectId)
            try await cluster.produce((0..<9).map(trip.fix))
            try await waitUntil("the database reported not ready", within: .seconds(60)) {
                await cluster.readiness(0)?.components["database"] == false
            }
            let stopped = await cluster.evaluators[0].terminate(within: 40)
            #expect(stopped.map { $0 < 30 } == true, "SIGTERM took \(String(describing: stopped)) s")

            try await cluster.postgres.start()
            try cluster.restart(0)
            let events = try await consumeEvents(of: trip.deviceId, count: 2, cluster.harness)
            #expect(events.map(\.type) == [.checkin, .checkout])
        }
    }
}
