import Foundation
import Logging
import PostgresNIO
import Shared

/// Zones and their fences, per project. A project's zones are replaced as a whole
/// document so that an import is atomic: evaluators see the old set or the new one.
package struct ZoneStore: Sendable {
    let database: Database
    let logger: Logger

    package init(database: Database, logger: Logger) {
        self.database = database
        self.logger = logger
    }

    /// Replaces every zone of the project with the document's, in one transaction, keeps the
    /// document as the project's next numbered version (returned), and moves the project's
    /// zones version to the catalog's next one. Throws ``ZonesVersionMismatch`` when
    /// `expectedVersion` is given and is not the project's current version, and
    /// ``ZonesReplacedTooSoon`` when the project's zones were replaced less than
    /// `minimumInterval` ago; either way nothing changes. The version keeps its `author` (the
    /// management key's id) and `message` (already checked by ``ZonesVersionMessage``).
    @discardableResult
    package func replaceZones(
        projectId: String, with document: ZonesDocument, minimumInterval: Duration = .zero, expectedVersion: Int64? = nil,
        author: String? = nil, message: String? = nil
    ) async throws -> Int64 {
        let encoder = WireJSON.encoder()
        func json<T: Encodable>(_ value: T?) throws -> String {
            guard let value else { return "" }
            return String(decoding: try encoder.encode(value), as: UTF8.self)
        }
        let zones = document.zones
        let zoneIds = zones.map(\.id)
        let names = zones.map(\.name)
        let descriptions = zones.map(\.description)
        let customData = try zones.map { try json($0.customData) }
        let retrigger = zones.map(\.minimumRetriggerTime)
        let checkOut = zones.map(\.checkOutEnabled)
        let enabled = zones.map(\.enabled)
        let conditions = try zones.map { try json($0.conditions) }
        let schedules = try zones.map { try json($0.activeSchedule) }
        let beacons = try zones.map { try json($0.beacons) }
        let positions = Array(0..<zones.count)
        let documentJSON = try json(document)

        var fenceZoneIds: [String] = []
        var fenceIds: [String] = []
        var fenceNames: [String] = []
        var fenceDescriptions: [String] = []
        var fenceGeometries: [String] = []
        var fenceRadii: [Double] = []
        var fencePositions: [Int] = []
        for zone in zones {
            for (position, fence) in zone.fences.enumerated() {
                fenceZoneIds.append(zone.id)
                fenceIds.append(fence.id)
                fenceNames.append(fence.name)
                fenceDescriptions.append(fence.description)
                fenceGeometries.append(try json(fence.geometry))
                fenceRadii.append(fence.radius ?? -1)
                fencePositions.append(position)
            }
        }

        return try await database.withTransaction { connection in
            // The project's row is locked first: two replacements of one project take turns, so
            // the version read here is still the current one when the next is written.
            let last = try await connection.query(
                """
                SELECT EXTRACT(EPOCH FROM now() - zones_replaced_at)::float8 FROM projects WHERE id = \(projectId) FOR UPDATE
                """, logger: logger)
            var elapsedSinceLastReplacement: Double?
            for try await elapsed in last.decode(Double?.self) { elapsedSinceLastReplacement = elapsed }
            let replacedVersion = try await currentVersion(projectId: projectId, on: connection)
            if let expectedVersion, expectedVersion != replacedVersion {
                throw ZonesVersionMismatch(currentVersion: replacedVersion)
            }
            let interval = minimumInterval.seconds
            if let elapsed = elapsedSinceLastReplacement, elapsed < interval {
                throw ZonesReplacedTooSoon(retryAfter: .milliseconds(Int64(((interval - elapsed) * 1000).rounded(.up))))
            }
            try await connection.perform("DELETE FROM zones WHERE project_id = \(projectId)", logger: logger)
            try await connection.perform(
                """
                INSERT INTO zones (project_id, id, name, description, custom_data, minimum_retrigger_time,
                                   check_out_enabled, enabled, conditions, active_schedule, beacons, position)
                SELECT \(projectId), z.id, z.name, z.description, z.custom_data::jsonb, z.mrt, z.check_out, z.enabled,
                       NULLIF(z.conditions, '')::jsonb, NULLIF(z.schedule, '')::jsonb, z.beacons::jsonb, z.position
                FROM UNNEST(\(zoneIds)::text[], \(names)::text[], \(descriptions)::text[], \(customData)::text[],
                            \(retrigger)::float8[], \(checkOut)::bool[], \(enabled)::bool[], \(conditions)::text[],
                            \(schedules)::text[], \(beacons)::text[], \(positions)::int8[])
                     AS z(id, name, description, custom_data, mrt, check_out, enabled, conditions, schedule, beacons, position)
                """, logger: logger)
            try await connection.perform(
                """
                INSERT INTO fences (project_id, zone_id, id, name, description, geometry, radius, position)
                SELECT \(projectId), f.zone_id, f.id, f.name, f.description, f.geometry::jsonb, NULLIF(f.radius, -1), f.position
                FROM UNNEST(\(fenceZoneIds)::text[], \(fenceIds)::text[], \(fenceNames)::text[], \(fenceDescriptions)::text[],
                            \(fenceGeometries)::text[], \(fenceRadii)::float8[], \(fencePositions)::int8[])
                     AS f(zone_id, id, name, description, geometry, radius, position)
                """, logger: logger)
            try await connection.perform(
                """
                WITH next AS (UPDATE zone_catalog_version SET version = version + 1 RETURNING version)
                UPDATE projects SET zones_version = (SELECT version FROM next), zones_replaced_at = now()
                WHERE id = \(projectId)
                """, logger: logger)
            let version = replacedVersion + 1
            try await connection.perform(
                """
                INSERT INTO zone_document_versions (project_id, version, zone_count, document, author, message)
                VALUES (\(projectId), \(version), \(zones.count), \(documentJSON)::jsonb, \(author), \(message))
                """, logger: logger)
            return version
        }
    }

    /// The project's zones as a document (the export format).
    package func zones(projectId: String) async throws -> ZonesDocument {
        ZonesDocument(zones: try await snapshot(projectIds: [projectId]).projects.first?.zones ?? [])
    }

    /// The project's zones as a document with the number of the version they are, read in one
    /// snapshot: the version always names the zones answered beside it.
    package func currentZones(projectId: String) async throws -> VersionedZones {
        try await database.withTransaction { connection in
            try await connection.perform("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY", logger: logger)
            let snapshot = try await loadAll(projectIds: [projectId], on: connection)
            return VersionedZones(
                version: try await currentVersion(projectId: projectId, on: connection),
                document: ZonesDocument(zones: snapshot.projects.first?.zones ?? []))
        }
    }

    /// The minimum retrigger time of each of these zones of the project (zones since
    /// deleted are left out): what a device view needs, without reading the fences.
    package func minimumRetriggerTimes(projectId: String, zoneIds: [String]) async throws -> [String: Double] {
        guard !zoneIds.isEmpty else { return [:] }
        let rows = try await database.client.query(
            """
            SELECT id, minimum_retrigger_time FROM zones WHERE project_id = \(projectId) AND id = ANY(\(zoneIds)::text[])
            """, logger: logger)
        var times: [String: Double] = [:]
        for try await (id, seconds) in rows.decode((String, Double).self) { times[id] = seconds }
        return times
    }

    /// These projects' zones (a project without zones has none in the snapshot) with
    /// each one's zones version, all read in one snapshot.
    package func catalog(projects: [String]) async throws -> ZoneCatalogSnapshot {
        try await snapshot(projectIds: projects)
    }

    /// The catalog version and each project's zones version (projects whose zones were
    /// never replaced are left out): what an evaluator compares with what it built.
    package func versions() async throws -> (catalog: Int64, projects: [String: Int64]) {
        let rows = try await database.client.query(
            """
            SELECT '', version FROM zone_catalog_version
            UNION ALL
            SELECT id, zones_version FROM projects WHERE zones_version > 0
            """, logger: logger)
        var catalog: Int64 = 0
        var projects: [String: Int64] = [:]
        for try await (project, version) in rows.decode((String, Int64).self) {
            if project.isEmpty { catalog = version } else { projects[project] = version }
        }
        return (catalog, projects)
    }

    /// Zones, fences and the version are read in one repeatable-read transaction: read
    /// apart, a replacement committing between the reads would pair the new zones with
    /// the old fences (a zone with none, or with another zone's).
    private func snapshot(projectIds: [String]) async throws -> ZoneCatalogSnapshot {
        try await database.withTransaction { connection in
            try await connection.perform("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY", logger: logger)
            return try await loadAll(projectIds: projectIds, on: connection)
        }
    }

    private func loadAll(projectIds: [String], on connection: PostgresConnection) async throws -> ZoneCatalogSnapshot {
        let decoder = WireJSON.decoder()
        func decode<T: Decodable>(_ type: T.Type, _ text: String?) throws -> T? {
            guard let text, !text.isEmpty else { return nil }
            return try decoder.decode(T.self, from: Data(text.utf8))
        }
        var projectVersions: [String: Int64] = [:]
        let versionRows = try await connection.query(
            "SELECT id, zones_version FROM projects WHERE id = ANY(\(projectIds)::text[])", logger: logger)
        for try await (project, projectVersion) in versionRows.decode((String, Int64).self) {
            projectVersions[project] = projectVersion
        }
        var fencesByZone: [String: [FenceDefinition]] = [:]
        let fenceRows = try await connection.query(
            """
            SELECT project_id, zone_id, id, name, description, geometry::text, radius FROM fences
            WHERE project_id = ANY(\(projectIds)::text[])
            ORDER BY project_id, zone_id, position
            """, logger: logger)
        for try await (project, zoneId, id, name, description, geometry, radius) in fenceRows.decode(
            (String, String, String, String, String, String, Double?).self)
        {
            guard let geometry = try decode(GeoJSONGeometry.self, geometry) else { continue }
            fencesByZone[project + "\u{0}" + zoneId, default: []].append(
                FenceDefinition(id: id, name: name, description: description, geometry: geometry, radius: radius))
        }

        var result: [(projectId: String, zones: [ZoneDefinition])] = []
        let zoneRows = try await connection.query(
            """
            SELECT project_id, id, name, description, custom_data::text, minimum_retrigger_time, check_out_enabled,
                   enabled, conditions::text, active_schedule::text, beacons::text
            FROM zones WHERE project_id = ANY(\(projectIds)::text[])
            ORDER BY project_id, position, id
            """, logger: logger)
        for try await row in zoneRows {
            let (project, id, name, description, customData, mrt, checkOut, enabled, conditions, schedule, beacons) =
                try row.decode(
                    (String, String, String, String, String, Double, Bool, Bool, String?, String?, String).self)
            let zone = ZoneDefinition(
                id: id, name: name, description: description,
                customData: try decode([String: String].self, customData) ?? [:],
                minimumRetriggerTime: mrt, checkOutEnabled: checkOut, enabled: enabled,
                conditions: try decode(ZoneConditions.self, conditions),
                activeSchedule: try decode(ActiveSchedule.self, schedule),
                fences: fencesByZone[project + "\u{0}" + id] ?? [],
                beacons: try decode([BeaconDefinition].self, beacons) ?? [])
            if result.last?.projectId == project {
                result[result.count - 1].zones.append(zone)
            } else {
                result.append((project, [zone]))
            }
        }
        return ZoneCatalogSnapshot(projects: result, projectVersions: projectVersions)
    }
}

/// Projects' zones as of one snapshot.
package struct ZoneCatalogSnapshot: Sendable {
    /// Projects with at least one zone, in project order.
    package var projects: [(projectId: String, zones: [ZoneDefinition])]
    /// The zones version of every project read (with zones or not).
    package var projectVersions: [String: Int64]
}

/// A project's zones were replaced less than the minimum interval ago.
package struct ZonesReplacedTooSoon: Error, Sendable, CustomStringConvertible {
    /// How long until a replacement is accepted again.
    package var retryAfter: Duration

    package init(retryAfter: Duration) {
        self.retryAfter = retryAfter
    }

    package var description: String {
        "the project's zones were replaced less than the minimum interval ago; try again in \(Int(retryAfter.seconds.rounded(.up))) s"
    }
}
