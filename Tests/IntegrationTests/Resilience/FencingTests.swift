import Foundation
import Persistence
import PostgresNIO
import Shared
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A worker frozen past its session loses its partitions; when it wakes up, what it
/// was about to write can never land over its successor's newer states.
@Suite(.serialized) struct FencingTests {
    @Test func frozenWorkerCannotOverwriteItsSuccessorsStates() async throws {
        let cluster = try EvaluatorCluster()
        defer { cluster.stopAll() }
        cluster.partitions = 1
        // The frozen worker's transaction must outlive the freeze, so that only the epoch stops it.
        cluster.environment["CHECKIN_DATABASE_IDLE_IN_TRANSACTION_TIMEOUT"] = "120"
        cluster.environment["CHECKIN_EVALUATOR_BATCH_TIMEOUT"] = "120"
        try await cluster.prepare()
        let projectId = cluster.harness.projectId
        // The first batch to store states of this project pauses inside its transaction, once,
        // before any row is written: the worker can be frozen there holding no row lock.
        _ = try await cluster.query("CREATE SEQUENCE pause_once")
        _ = try await cluster.query(
            """
            CREATE FUNCTION pause_first_batch() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
              IF NEW.project_id = '\(projectId)' AND nextval('pause_once') = 1 THEN
                PERFORM pg_sleep(30);
              END IF;
              RETURN NEW;
            END $$
            """)
        _ = try await cluster.query(
            "CREATE TRIGGER pause_first_batch BEFORE INSERT ON device_states FOR EACH ROW EXECUTE FUNCTION pause_first_batch()")

        try cluster.startEvaluator()
        try await cluster.waitUntilReady(0)
        try await waitUntil("the first worker holds the partition", within: .seconds(30)) {
            try await cluster.query("SELECT count(*) FROM partition_epochs").first?.decode(Int.self) == 1
        }
        // Devices never seen before: there is no state row the first worker could lock.
        let trips = (0..<5).map { TestTrip(projectId: projectId, deviceId: "never-seen-\($0)-\(cluster.harness.suffix)") }
        try await cluster.produce(trips.flatMap { trip in (0..<4).map(trip.fix) })
        try await waitUntil("the first worker's batch is inside its transaction", within: .seconds(30)) {
            try await cluster.query("SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'PgSleep'").first?.decode(
                Int.self) == 1
        }
        cluster.evaluators[0].signal(SIGSTOP)

        // The devices' longer history, decided by the worker that takes the partition over.
        try await cluster.produce(trips.flatMap { trip in (4..<9).map(trip.fix) })
        try cluster.startEvaluator()
        let lastFix = trips[0].start.addingTimeInterval(8 * 30)
        try await waitUntil("the successor committed the longer history", within: .seconds(25)) {
            try await cluster.query(
                "SELECT count(*) FROM device_states WHERE project_id = '\(projectId)' AND last_fix_at >= '\(RFC3339.format(lastFix))'"
            ).first?.decode(Int.self) == trips.count
        }

        // The frozen worker wakes up, finishes its pause and tries to commit its shorter history.
        cluster.evaluators[0].signal(SIGCONT)
        try await waitUntil("the frozen worker's transaction ended", within: .seconds(40)) {
            try await cluster.query("SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'PgSleep'").first?.decode(
                Int.self) == 0
        }
        try await Task.sleep(for: .seconds(3))
        let states = try await cluster.query(
            "SELECT count(*) FROM device_states WHERE project_id = '\(projectId)' AND last_fix_at >= '\(RFC3339.format(lastFix))'")
        #expect(try states.first?.decode(Int.self) == trips.count, "\(cluster.logs)")
        #expect(cluster.evaluators[0].log.contains("partitions moved to another worker"))
    }
}
