import Foundation
import Geofence
import Kafka
import Persistence
import PostgresNIO
import Shared
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// An event exists only if the device state that decided it committed: a batch whose
/// commit fails, or whose worker dies before the commit, publishes nothing, and its
/// retry decides afresh with the zones of then. What the topics hold always agrees with
/// the committed states and with `checkin replay` given the zones each range used.
@Suite(.serialized) struct EventOutboxTests {
    /// The trip's zone, moved under another id: the retry's zones.
    static var replacedZones: ZonesDocument {
        var zones = TestTrip.zones
        zones.zones[0].id = "zone-kiosk"
        return zones
    }

    /// The check-in fixes (up to the centre) and their JSON lines, for `checkin replay`.
    static func enteringFixes(_ trip: TestTrip) throws -> (fixes: [[String: Any]], lines: [String]) {
        let fixes = (0..<5).map(trip.fix)
        let lines = try fixes.map { String(decoding: try JSONSerialization.data(withJSONObject: $0), as: UTF8.self) }
        return (fixes, lines)
    }

    /// The device's committed state, as the engine reads it.
    static func state(of trip: TestTrip, in cluster: EvaluatorCluster) async throws -> DeviceState? {
        let rows = try await cluster.query(
            """
            SELECT COALESCE(state_binary, convert_to(state::text, 'UTF8')) FROM device_states
             WHERE project_id = '\(trip.projectId)' AND device_id = '\(trip.deviceId)'
            """)
        guard let stored = try rows.first?.decode(ByteBuffer.self) else { return nil }
        return try DeviceState(storedBytes: Array(stored.readableBytesView))
    }

    /// Waits until the fixes are committed and their events have left the outbox, then
    /// checks the topics against the state and against replay with the new zones.
    func expectTopicsAgree(
        _ cluster: EvaluatorCluster, trip: TestTrip, lines: [String], fixes: Int
    ) async throws {
        try await waitUntil("the fixes committed and their events published", within: .seconds(60)) {
            let offsets = try await cluster.query("SELECT coalesce(sum(next_offset), 0)::int8 FROM consumer_offsets")
            let waiting = try await cluster.query("SELECT count(*)::int8 FROM event_outbox")
            return try offsets.first?.decode(Int64.self) == Int64(fixes) && waiting.first?.decode(Int64.self) == 0
        }
        var published: [String: CheckEvent] = [:]
        for topic in [cluster.harness.topics.checkIns, cluster.harness.topics.checkOuts] {
            for message in try await consumeAll(topic: topic, logger: cluster.logger) {
                let event = try WireJSON.decoder().decode(CheckEvent.self, from: Data(message.value))
                published[event.eventId] = event
            }
        }
        let replayed = try await replay(zones: Self.replacedZones, fixLines: lines)
        #expect(!replayed.isEmpty)
        #expect(published == replayed, "\(cluster.logs)")
        #expect(!published.values.contains { $0.zone.id == "zone-cafe" }, "an event the committed state never had")
        let state = try #require(try await Self.state(of: trip, in: cluster))
        #expect(state.openCheckInZoneIds == ["zone-kiosk"])
    }

    /// The commit fails (a trigger refuses the offsets as a serialization failure, which
    /// is retried) while the zones change: the check-in the first attempts decided into
    /// the old zone is never published, and the retry checks in where the new zones say.
    @Test func failedCommitPublishesNothingAndTheRetryUsesTheNewZones() async throws {
        let cluster = try EvaluatorCluster()
        try await withCleanUp({ await cluster.stopAll() }) {
            cluster.partitions = 1
            try await cluster.prepare()
            let refusal = OffsetCommitRefusal(group: cluster.harness.evaluatorGroup, sqlState: "40001")
            for statement in refusal.create { _ = try await cluster.query(statement) }
            // Produced before the worker starts: its first batch holds the whole entry.
            let trip = TestTrip(projectId: cluster.harness.projectId, deviceId: "outbox-commit-\(cluster.harness.suffix)")
            let (fixes, lines) = try Self.enteringFixes(trip)
            try await cluster.produce(fixes)
            try cluster.startEvaluator()
            try await waitUntil("the batch failed to commit twice", within: .seconds(60)) {
                cluster.evaluators[0].log.components(separatedBy: "batch failed transiently").count > 2
            }

            try await cluster.replaceZones(with: Self.replacedZones)
            // The evaluator refreshes its zones every 0.5 s here.
            try await Task.sleep(for: .seconds(2))
            for statement in refusal.drop { _ = try await cluster.query(statement) }

            try await expectTopicsAgree(cluster, trip: trip, lines: lines, fixes: fixes.count)
        }
    }

    /// The worker is killed inside the batch's transaction, after deciding the check-in
    /// and before the commit; the zones change before another worker takes over.
    @Test func workerKilledBeforeItsCommitPublishesNothing() async throws {
        let cluster = try EvaluatorCluster()
        try await withCleanUp({ await cluster.stopAll() }) {
            cluster.partitions = 1
            try await cluster.prepare()
            // The first batch of this project to save states pauses there, until the test releases it.
            _ = try await cluster.query("CREATE TABLE pause_released (released boolean)")
            _ = try await cluster.query(
                """
                CREATE FUNCTION pause_first_batch() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                  WHILE NOT EXISTS (SELECT 1 FROM pause_released) LOOP
                    PERFORM pg_sleep(0.2);
                  END LOOP;
                  RETURN NEW;
                END $$
                """)
            _ = try await cluster.query(
                "CREATE TRIGGER pause_first_batch BEFORE INSERT ON device_states FOR EACH ROW EXECUTE FUNCTION pause_first_batch()")
            // Produced before the worker starts: the paused batch decides the whole entry.
            let trip = TestTrip(projectId: cluster.harness.projectId, deviceId: "outbox-kill-\(cluster.harness.suffix)")
            let (fixes, lines) = try Self.enteringFixes(trip)
            try await cluster.produce(fixes)
            try cluster.startEvaluator()
            try await waitUntil("the batch is inside its transaction", within: .seconds(30)) {
                try await cluster.query("SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'PgSleep'").first?.decode(
                    Int.self) == 1
            }
            cluster.evaluators[0].kill()
            _ = try await cluster.query("INSERT INTO pause_released VALUES (true)")
            _ = try await cluster.query("DROP TRIGGER pause_first_batch ON device_states")
            try await cluster.replaceZones(with: Self.replacedZones)
            try cluster.restart(0)

            try await expectTopicsAgree(cluster, trip: trip, lines: lines, fixes: fixes.count)
        }
    }
}
