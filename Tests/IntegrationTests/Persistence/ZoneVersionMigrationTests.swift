import Foundation
import Logging
import Persistence
import PostgresNIO
import Shared
import Testing

/// Zones stored before zones were versioned become their project's version 1, so that a
/// project has a version to roll back to from its first replacement on.
@Suite struct ZoneVersionMigrationTests {
    let logger = Logger.forTests("test.zone-version-migration")

    @Test func zonesFromBeforeBecomeVersionOne() async throws {
        let logger = logger
        let url = try await freshDatabaseURL(logger: logger)
        let door = GeoJSONGeometry.point(Position(lon: 13.4, lat: 52.5))
        let park = GeoJSONGeometry.polygon([
            [
                Position(lon: 13.40, lat: 52.50), Position(lon: 13.41, lat: 52.50), Position(lon: 13.41, lat: 52.51),
                Position(lon: 13.40, lat: 52.50),
            ]
        ])
        let expected = ZonesDocument(zones: [
            ZoneDefinition(
                id: "cafe", name: "Cafe", description: "corner", customData: ["storeId": "042"], minimumRetriggerTime: 600,
                checkOutEnabled: true, conditions: ZoneConditions(maxSpeed: 3),
                fences: [FenceDefinition(id: "door", name: "Door", geometry: door, radius: 30)]),
            ZoneDefinition(
                id: "park", name: "Park", enabled: false,
                activeSchedule: ActiveSchedule(
                    timeZone: "Europe/Berlin", windows: [ScheduleWindow(days: [.monday], start: "08:00", end: "18:00")]),
                fences: [FenceDefinition(id: "outline", geometry: park)],
                beacons: [BeaconDefinition(id: "gate", uuid: "F7826DA6-4FA2-4E98-8024-BC5B71E0893E", major: 1)]),
        ])
        let before = Migration.all.filter { $0.version < 19 }
        try await withMigratedDatabase(url: url, migrations: before, logger: logger) { database in
            func json(_ value: some Encodable) throws -> String { String(decoding: try WireJSON.encoder().encode(value), as: UTF8.self) }
            let cafe = expected.zones[0]
            let park = expected.zones[1]
            try await database.client.query(
                """
                INSERT INTO projects (id, name, zones_replaced_at) VALUES ('with-zones', 'p', '2026-11-20T10:00:00Z'), ('without', 'q', NULL)
                """, logger: logger)
            // Stored in the opposite order to their positions: the version keeps the positions' order.
            try await database.client.query(
                """
                INSERT INTO zones (project_id, id, name, description, custom_data, minimum_retrigger_time, check_out_enabled,
                                   enabled, conditions, active_schedule, beacons, position)
                VALUES ('with-zones', 'park', 'Park', '', '{}', 0, false, false, NULL, \(try json(park.activeSchedule))::jsonb,
                        \(try json(park.beacons))::jsonb, 1),
                       ('with-zones', 'cafe', 'Cafe', 'corner', \(try json(cafe.customData))::jsonb, 600, true, true,
                        \(try json(cafe.conditions))::jsonb, NULL, '[]', 0)
                """, logger: logger)
            try await database.client.query(
                """
                INSERT INTO fences (project_id, zone_id, id, name, description, geometry, radius, position)
                VALUES ('with-zones', 'cafe', 'door', 'Door', '', \(try json(door))::jsonb, 30, 0),
                       ('with-zones', 'park', 'outline', '', '', \(try json(park.fences[0].geometry))::jsonb, NULL, 0)
                """, logger: logger)
        }
        try await withMigratedDatabase(url: url, logger: logger) { database in
            let zones = ZoneStore(database: database, logger: logger)
            #expect(try await zones.document(projectId: "with-zones", version: 1) == expected)
            let versions = try await zones.versions(projectId: "with-zones", before: nil, limit: 10)
            #expect(
                versions.versions == [ZonesVersionSummary(version: 1, createdAt: RFC3339.parse("2026-11-20T10:00:00Z")!, zoneCount: 2)])
            let current = try await zones.currentZones(projectId: "with-zones")
            #expect(current.version == 1 && current.document == expected)
            #expect(try await zones.versions(projectId: "without", before: nil, limit: 10).versions.isEmpty)
            #expect(try await zones.currentZones(projectId: "without").version == 0)
            // The next replacement is version 2.
            #expect(try await zones.replaceZones(projectId: "with-zones", with: ZonesDocument(zones: [expected.zones[0]])) == 2)
        }
    }
}
