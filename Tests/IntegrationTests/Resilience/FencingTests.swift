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
        try await withCleanUp({ await cluster.stopAll() }) {
            cluster.partitions = 1
            // The frozen worker's transaction must outlive the freeze, so that only the epoch stops it.
            cluster.environment["CHECKIN_DATABASE_IDLE_IN_TRANSACTION_TIMEOUT"] = "120"
            cluster.environment["CHECKIN_EVALUATOR_BATCH_TIMEOUT"] = "120"
            try await cluster.prepare()
            let projectId = cluster.harness.projectId
            // The first batch to store states of this project pauses inside its transaction, once,
            // before any row is written, until the test releases it: the worker can be frozen there
            // holding no row lock, for as long as its successor needs to take over.
            _ = try await cluster.query("CREATE SEQUENCE pause_once")
            _ = try await cluster.query("CREATE TABLE pause_released (released boolean)")
            _ = try await cluster.query(
                """
                CREATE FUNCTION pause_first_batch() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                  IF NEW.project_id = '\(projectId)' AND nextval('pause_once') = 1 THEN
                    WHILE NOT EXISTS (SELECT 1 FROM pause_released) LOOP
                      PERFORM pg_sleep(0.2);
                    END LOOP;
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
            // A second before the last fix: Postgres keeps microseconds (truncated), the fix's
            // time has milliseconds, and the shorter history ends minutes earlier.
            let lastFix = trips[0].start.addingTimeInterval(8 * 30 - 1)
            let longerHistory =
                "SELECT count(*) FROM device_states WHERE project_id = '\(projectId)' AND last_fix_at >= '\(RFC3339.format(lastFix))'"
            try await waitUntil("the successor committed the longer history", within: .seconds(90)) {
                try await cluster.query(longerHistory).first?.decode(Int.self) == trips.count
            }

            // The frozen worker wakes up, finishes its pause and tries to commit its shorter history.
            _ = try await cluster.query("INSERT INTO pause_released VALUES (true)")
            cluster.evaluators[0].signal(SIGCONT)
            let refused = "partitions moved to another worker"
            try await waitUntil("the frozen worker's batch ended", within: .seconds(60)) {
                let kept = try await cluster.query(longerHistory).first?.decode(Int.self)
                return cluster.evaluators[0].log.contains(refused) || kept != trips.count
            }
            #expect(try await cluster.query(longerHistory).first?.decode(Int.self) == trips.count, "\(cluster.logs)")
            #expect(cluster.evaluators[0].log.contains(refused))
        }
    }
}
