import Evaluator
import Foundation
import Logging
import Persistence
import PostgresNIO
import ServiceSupport
import Shared
import Testing

/// Retention, with short retentions, on a database of these tests' own (a pass deletes
/// whatever is old enough, whoever wrote it).
@Suite(.serialized) struct RetentionTests {
    let logger = Logger.forTests("test.retention")

    static let ownDatabaseURL = Task<String, any Error> {
        var logger = Logger(label: "test.retention")
        logger.logLevel = .warning
        return try await freshDatabaseURL(logger: logger)
    }

    func withDatabase<T: Sendable>(_ body: @Sendable (Database) async throws -> T) async throws -> T {
        try await withMigratedDatabase(url: try await Self.ownDatabaseURL.value, logger: logger, body)
    }

    /// Decision records are kept for the retention and, past it, each device's newest 100:
    /// a device that reported 150 fixes keeps its last 100, one that reported 30 keeps all.
    @Test func decisionRecordsKeepEachDevicesNewestHundredPastTheRetention() async throws {
        let logger = logger
        let projectId = "decisions-" + UUID().uuidString
        let busy = DeviceKey(projectId: projectId, deviceId: "busy")
        let quiet = DeviceKey(projectId: projectId, deviceId: "quiet")
        let (within, past, busyLeft, quietLeft, oldestKept) = try await withDatabase { database in
            let store = DecisionStore(logger: logger)
            func records(_ key: DeviceKey, _ count: Int) -> [NewDecisionRecord] {
                (0..<count).map { index in
                    NewDecisionRecord(
                        key: key,
                        record: DecisionRecord(
                            fixId: "\(key.deviceId)-\(index)", timestamp: Date(timeIntervalSince1970: 1_800_000_000 + Double(index)),
                            evaluatedAt: Date(), mode: .normal, location: DecisionLocation(lat: 1, lon: 2), entries: [], eventIds: []))
                }
            }
            try await database.withTransaction { connection in
                try await DeviceStateStore(logger: logger).save(
                    [busy, quiet].map { StoredDeviceState(key: $0, state: [1], lastFixAt: nil, staleAt: nil) }, on: connection)
                try await store.append(records(busy, 150) + records(quiet, 30), on: connection)
            }
            let day = Duration.seconds(86_400)
            let within = try await store.purge(olderThan: day, keep: 100, now: Date(), on: database.client)
            let past = try await store.purge(olderThan: day, keep: 100, now: Date().addingTimeInterval(90_000), on: database.client)
            let busyPage = try await store.page(
                projectId: projectId, deviceId: "busy", before: nil, limit: 1000, on: database.client)
            let quietPage = try await store.page(
                projectId: projectId, deviceId: "quiet", before: nil, limit: 1000, on: database.client)
            return (within, past, busyPage.records.count, quietPage.records.count, busyPage.records.last?.fixId)
        }
        #expect(within == 0)
        #expect(past == 50)
        #expect(busyLeft == 100 && quietLeft == 30)
        #expect(oldestKept == "busy-50")
    }

    /// Pages of a device's records, newest first, follow their cursors across rows and
    /// within one: every record once, in order, and no cursor after the last.
    @Test func decisionPagesFollowTheirCursorsThroughEveryRecord() async throws {
        let logger = logger
        let key = DeviceKey(projectId: "decision-pages-" + UUID().uuidString, deviceId: "paged")
        let (fixIds, pages) = try await withDatabase { database in
            let store = DecisionStore(logger: logger)
            func records(_ range: Range<Int>) -> [NewDecisionRecord] {
                range.map { index in
                    NewDecisionRecord(
                        key: key,
                        record: DecisionRecord(
                            fixId: "fix-\(index)", timestamp: Date(timeIntervalSince1970: 1_800_000_000 + Double(index)),
                            evaluatedAt: Date(), mode: .normal, location: DecisionLocation(lat: 1, lon: 2), entries: [], eventIds: []))
                }
            }
            // Three writes: rows of 50 and 20, then 3, then 50 (a write's run is split past recordsPerRow).
            for range in [0..<70, 70..<73, 73..<123] {
                try await database.withTransaction { connection in try await store.append(records(range), on: connection) }
            }
            var fixIds: [String] = []
            var cursor: Int64?
            var pages = 0
            repeat {
                let page = try await store.page(
                    projectId: key.projectId, deviceId: key.deviceId, before: cursor, limit: 7, on: database.client)
                fixIds += page.records.compactMap(\.fixId)
                cursor = page.nextCursor
                pages += 1
            } while cursor != nil && pages < 100
            return (fixIds, pages)
        }
        #expect(fixIds == (0..<123).reversed().map { "fix-\($0)" })
        #expect(pages == 18)
    }

    /// A device erased while its records wait to be written: a row that would hold one of its
    /// records from before the erasure's marker is not kept, even beside one from after it;
    /// a row of records from after it alone is. Told by position on the fixes topic alone.
    @Test func recordsFromBeforeAnErasureAreNotWrittenAfterIt() async throws {
        let logger = logger
        let key = DeviceKey(projectId: "decision-erasure-" + UUID().uuidString, deviceId: "erased")
        let remaining = try await withDatabase { database in
            func record(_ fixId: String, offset: Int64) -> NewDecisionRecord {
                NewDecisionRecord(
                    key: key,
                    record: DecisionRecord(
                        fixId: fixId, timestamp: Date(), evaluatedAt: Date(), mode: .normal,
                        location: DecisionLocation(lat: 1, lon: 2), entries: [], eventIds: []),
                    partition: 3, offset: offset)
            }
            try await database.client.query(
                """
                INSERT INTO erasures (project_id, device_key, state, topic, partition, marker_offset, erased_at)
                VALUES (\(key.projectId), \(key.recordKey), 'erased', 'checkin.fixes', 3, 100, now())
                """, logger: logger)
            for records in [[record("before", offset: 99), record("beside", offset: 101)], [record("after", offset: 102)]] {
                try await database.withTransaction { connection in
                    try await ErasureStore.holdPositions(topic: "checkin.fixes", partitions: [3], on: connection, logger: logger)
                    try await DecisionStore(logger: logger).append(records, on: connection)
                }
            }
            let rows = try await database.client.query(
                "SELECT records FROM decision_records WHERE device_key = \(key.recordKey)", logger: logger)
            var texts: [String] = []
            for try await text in rows.decode(String.self) { texts.append(text) }
            return texts
        }
        #expect(!remaining.contains { $0.contains(#""fixId":"before""#) }, "\(remaining)")
        #expect(remaining.count == 1 && remaining[0].contains(#""fixId":"after""#), "\(remaining)")
    }

    /// Events leave the event log once older than its retention.
    @Test func eventLogIsPurgedPastItsRetention() async throws {
        let logger = logger
        let projectId = "event-log-" + UUID().uuidString
        let (within, past) = try await withDatabase { database in
            let event = OutboxEvent(
                sourcePartition: 0, topic: "t", deviceId: "d", eventId: UUID().uuidString, eventType: "checkin", event: "{}",
                log: EventLogKeys(projectId: projectId, zoneId: "z", eventTime: Date(), sequence: 1))
            try await database.withTransaction { connection in
                try await EventOutboxStore(database: database, logger: logger).add(
                    [event], group: "g-\(projectId)", sourceTopic: "fixes", on: connection)
            }
            let log = EventLogStore(database: database, logger: logger)
            let week = Duration.seconds(7 * 86_400)
            return (
                try await log.purge(olderThan: week, now: Date()),
                try await log.purge(olderThan: week, now: Date().addingTimeInterval(8 * 86_400))
            )
        }
        #expect(within == 0)
        #expect(past >= 1)
    }

    /// Delivered deliveries older than the retention go with their attempt log, a few per
    /// statement; pending and failed ones stay, and so does each device's last delivery
    /// while a later event may still look for it (its state exists).
    @Test func deliveredDeliveriesPastTheRetentionArePurged() async throws {
        let logger = logger
        // The purge counter reports to Prometheus only if metrics were bootstrapped before it was made.
        _ = MetricsBootstrap.prometheus()
        let projectId = "retention-" + UUID().uuidString
        let (purged, left, attemptsLeft, counted) = try await withDatabase { database in
            try await ProjectStore(database: database, logger: logger).createProject(id: projectId, name: "Retention")
            let webhooks = WebhookStore(database: database, logger: logger, sealer: SecretSealer(key: .generate()))
            let endpoint = try await webhooks.addEndpoint(
                projectId: projectId, url: "http://127.0.0.1:9/x", secrets: [WebhookSecret.generate()])
            // device: [(sequence, status, hours since delivered)]
            let plan: [String: [(Int, String, Double?)]] = [
                "all-delivered": [(1, "delivered", 2), (2, "delivered", 2), (3, "delivered", 2)],
                "stateless": [(1, "delivered", 2)],
                "recent": [(1, "delivered", 0)],
                "failed": [(1, "failed", nil), (2, "pending", nil)],
                "next-pending": [(1, "delivered", 2), (2, "pending", nil)],
            ]
            for (device, deliveries) in plan {
                try await webhooks.enqueue(
                    deliveries.map { sequence, _, _ in
                        NewDelivery(
                            endpointId: endpoint.id, projectId: projectId, eventId: "\(device)-\(sequence)", eventType: "checkin",
                            deviceId: device, eventTime: Date(), sequence: sequence, payload: "{}")
                    })
                for (sequence, status, hours) in deliveries where status != "pending" {
                    let eventId = "\(device)-\(sequence)"
                    try await database.client.query(
                        """
                        UPDATE deliveries SET status = \(status),
                               delivered_at = CASE WHEN \(status) = 'delivered'
                                                   THEN now() - make_interval(secs => \((hours ?? 0) * 3600)) END
                         WHERE project_id = \(projectId) AND event_id = \(eventId)
                        """, logger: logger)
                    try await database.client.query(
                        """
                        INSERT INTO delivery_attempts (delivery_id, attempt, started_at, latency_ms, status_code)
                        SELECT id, 1, now(), 5, 200 FROM deliveries WHERE project_id = \(projectId) AND event_id = \(eventId)
                        """, logger: logger)
                }
                if device != "stateless" {
                    try await database.withTransaction { connection in
                        try await DeviceStateStore(logger: logger).save(
                            [
                                StoredDeviceState(
                                    key: DeviceKey(projectId: projectId, deviceId: device), state: Array("{}".utf8), lastFixAt: nil,
                                    staleAt: nil)
                            ], on: connection)
                    }
                }
            }
            // Queued before the oldest was delivered, as in life.
            try await database.client.query(
                "UPDATE deliveries SET created_at = now() - interval '3 hours' WHERE project_id = \(projectId)", logger: logger)
            let service = RetentionService(
                name: "deliveries", metric: "checkin_notifier_deliveries_purged_total", logger: logger,
                purge: { now in try await webhooks.purgeDelivered(olderThan: .seconds(3600), now: now, batchSize: 2, pause: .zero) })
            let purged = try await service.pass(now: Date())
            var left: Set<String> = []
            for try await eventId in try await database.client.query(
                "SELECT event_id FROM deliveries WHERE project_id = \(projectId)", logger: logger
            ).decode(String.self) {
                left.insert(eventId)
            }
            var attemptsLeft = 0
            for try await count in try await database.client.query(
                "SELECT count(*) FROM delivery_attempts a JOIN deliveries d ON d.id = a.delivery_id WHERE d.project_id = \(projectId)",
                logger: logger
            ).decode(Int.self) {
                attemptsLeft = count
            }
            let counted = MetricsBootstrap.prometheus().emitToString().split(separator: "\n")
                .first { $0.hasPrefix("checkin_notifier_deliveries_purged_total ") }
                .flatMap { Double($0.split(separator: " ").last ?? "") }
            return (purged, left, attemptsLeft, counted)
        }
        #expect(purged == 3)
        #expect(left == ["all-delivered-3", "recent-1", "failed-1", "failed-2", "next-pending-1", "next-pending-2"])
        #expect(attemptsLeft == 4)
        #expect((counted ?? 0) >= 3)
    }

    /// Devices silent past the retention lose their state; one still inside a zone or
    /// with a check-in to close keeps it ten times as long.
    @Test func statesOfSilentDevicesArePurgedUnlessCheckedIn() async throws {
        let logger = logger
        let projectId = "retention-" + UUID().uuidString
        let inside = #"{"t": 1000, "z": [{"id": "zone-cafe", "in": true}]}"#
        let open = #"{"t": 1000, "z": [{"id": "zone-cafe", "o": {"id": "check-in", "t": 1000}}]}"#
        // device: (state, hours since it was last written)
        let plan: [String: (String, Double)] = [
            "idle-silent": ("{}", 2), "idle-recent": ("{}", 0.5), "inside-silent": (inside, 2), "open-silent": (open, 2),
            "inside-ancient": (inside, 11), "unreadable-silent": (#"{"t": "not a time"}"#, 2),
        ]
        let (purged, left) = try await withDatabase { database in
            let states = DeviceStateStore(logger: logger)
            try await database.withTransaction { connection in
                try await states.save(
                    plan.map { device, entry in
                        StoredDeviceState(
                            key: DeviceKey(projectId: projectId, deviceId: device), state: Array(entry.0.utf8), lastFixAt: nil, staleAt: nil
                        )
                    }, on: connection)
            }
            for (device, entry) in plan {
                try await database.client.query(
                    """
                    UPDATE device_states SET updated_at = now() - make_interval(secs => \(entry.1 * 3600))
                     WHERE project_id = \(projectId) AND device_id = \(device)
                    """, logger: logger)
            }
            let purge = DeviceStatePurge(
                database: database, retention: .seconds(3600), batchSize: 2, pause: .zero, logger: logger)
            let purged = try await purge.purge(now: Date())
            var left: Set<String> = []
            for try await device in try await database.client.query(
                "SELECT device_id FROM device_states WHERE project_id = \(projectId)", logger: logger
            ).decode(String.self) {
                left.insert(device)
            }
            return (purged, left)
        }
        #expect(purged == 3)
        #expect(left == ["idle-recent", "inside-silent", "open-silent"])
    }
}
