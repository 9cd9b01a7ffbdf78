import Foundation
import Logging
import Persistence
import PostgresNIO
import Shared
import Testing

/// Records written one row per fix, before rows held runs of records, read back the same
/// through the decisions API's store once the schema has moved on.
@Suite struct DecisionRecordMigrationTests {
    let logger = Logger.forTests("test.decision-migration")

    @Test func recordsWrittenPerFixReadBackAfterTheMigration() async throws {
        let logger = logger
        let url = try await freshDatabaseURL(logger: logger)
        let before = Migration.all.filter { $0.version < 18 }
        try await withMigratedDatabase(url: url, migrations: before, logger: logger) { database in
            try await database.client.query(
                """
                INSERT INTO decision_records (device_key, project_id, device_id, fix_id, fix_time, evaluated_at, mode, lat, lon,
                                              accuracy, speed, bearing, entries, event_ids)
                VALUES (\(DeviceKey(projectId: "p", deviceId: "d").recordKey), 'p', 'd', 'fix-1', '2026-11-26T10:00:00Z',
                        '2026-11-26T10:00:01.250Z', 'normal', 52.5, -0.125, NULL, 3.5, NULL, NULL, NULL),
                       (\(DeviceKey(projectId: "p", deviceId: "d").recordKey), 'p', 'd', NULL, '2026-11-26T10:00:10Z',
                        '2026-11-26T10:00:11Z', 'restart', 52.5, -0.125, 12, NULL, 90,
                        '[{"zoneId": "z", "outcome": "checked-in", "detail": {"checkInId": "c-1"}}]', '{e-1}')
                """, logger: logger)
        }
        let page = try await withMigratedDatabase(url: url, logger: logger) { database in
            try await DecisionStore(logger: logger).page(projectId: "p", deviceId: "d", before: nil, limit: 10, on: database.client)
        }
        var detail = DecisionDetail()
        detail.checkInId = "c-1"
        #expect(
            page.records == [
                DecisionRecord(
                    fixId: nil, timestamp: RFC3339.parse("2026-11-26T10:00:10Z")!, evaluatedAt: RFC3339.parse("2026-11-26T10:00:11Z")!,
                    mode: .restart, location: DecisionLocation(lat: 52.5, lon: -0.125, accuracy: 12, bearing: 90),
                    entries: [DecisionEntry(zoneId: "z", outcome: .checkedIn, detail: detail)], eventIds: ["e-1"]),
                DecisionRecord(
                    fixId: "fix-1", timestamp: RFC3339.parse("2026-11-26T10:00:00Z")!,
                    evaluatedAt: RFC3339.parse("2026-11-26T10:00:01.250Z")!, mode: .normal,
                    location: DecisionLocation(lat: 52.5, lon: -0.125, speed: 3.5), entries: [], eventIds: []),
            ])
        #expect(page.nextCursor == nil)
    }
}
