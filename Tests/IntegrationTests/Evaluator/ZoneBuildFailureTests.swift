import Evaluator
import Foundation
import Geofence
import Logging
import Persistence
import ServiceSupport
import Shared
import Testing

/// Zones that reach the database and do not build leave their project on the engine of
/// its last good zones, loudly: an empty engine would check its devices out of nothing
/// and forget their open check-ins.
@Suite(.serialized) struct ZoneBuildFailureTests {
    let logger = Logger.forTests("test.zone-build", level: .critical)

    @Test func projectWhoseZonesFailToBuildKeepsItsLastGoodEngineAndOpenCheckIns() async throws {
        let registry = MetricsBootstrap.prometheus()
        let logger = logger
        let project = "broken-" + UUID().uuidString.prefix(8).lowercased()
        try await withMigratedDatabase(url: try await freshDatabaseURL(logger: logger), logger: logger) { database in
            try await ProjectStore(database: database, logger: logger).createProject(id: project, name: "Broken")
            let zones = ZoneStore(database: database, logger: logger)
            try await zones.replaceZones(projectId: project, with: TestTrip.zones)
            let catalog = ZoneCatalog(
                zones: zones, configuration: EngineConfiguration(), refreshInterval: .seconds(60), logger: logger)
            let before = try await catalog.engines()
            #expect(before.engine(for: project).fenceCount == 1)

            // A device checks in with the good zones.
            let trip = TestTrip(projectId: project)
            var state = DeviceState()
            let checkIn = before.engine(for: project).evaluate(try fix(trip.fix(3)), state: &state)
            #expect(checkIn.events.map(\.type) == [.checkin])

            // Zones that do not build get into the database (validation is bypassed here).
            try await database.client.query(
                "UPDATE fences SET radius = -5 WHERE project_id = \(project)", logger: logger)
            try await database.client.query(
                """
                WITH next AS (UPDATE zone_catalog_version SET version = version + 1 RETURNING version)
                UPDATE projects SET zones_version = (SELECT version FROM next) WHERE id = \(project)
                """, logger: logger)
            try await catalog.refresh()
            let after = try await catalog.engines()
            #expect(after.catalogVersion > before.catalogVersion)
            #expect(after.engine(for: project) === before.engine(for: project))

            // The device's next fix inside the zone does not check it out of nothing.
            let next = after.engine(for: project).evaluate(try fix(trip.fix(4)), state: &state)
            #expect(next.events.isEmpty)
            #expect(state.openCheckInZoneIds == ["zone-cafe"])
            // Nor does a stale check-out see it as outside.
            #expect(after.engine(for: project).staleDeadline(of: state) == before.engine(for: project).staleDeadline(of: state))

            var buffer: [UInt8] = []
            registry.emit(into: &buffer)
            let text = String(decoding: buffer, as: UTF8.self)
            #expect(text.contains(#"checkin_evaluator_zone_build_failures_total{project="\#(project)"} 1"#))
        }
    }

    func fix(_ object: [String: Any]) throws -> Fix {
        let bytes = Array(try JSONSerialization.data(withJSONObject: object))
        return try FixJSONDecoder.decode(bytes, receivedAt: Date()).get()
    }
}
