import Evaluator
import Foundation
import Geofence
import Logging
import Persistence
import Shared
import Testing

/// A zones change costs in proportion to what changed: replacing one project's zones
/// rebuilds that project's engine and keeps every other project's as it was.
@Suite(.serialized) struct ZoneCatalogTests {
    let logger = Logger.forTests("test.zones")

    static let ownDatabaseURL = Task<String, any Error> {
        var logger = Logger(label: "test.zones")
        logger.logLevel = .warning
        return try await freshDatabaseURL(logger: logger)
    }

    @Test func replacingOneProjectsZonesRebuildsOnlyThatProject() async throws {
        let logger = logger
        let (small, large) = ("small-" + UUID().uuidString, "large-" + UUID().uuidString)
        try await withMigratedDatabase(url: try await Self.ownDatabaseURL.value, logger: logger) { database in
            let projects = ProjectStore(database: database, logger: logger)
            let zones = ZoneStore(database: database, logger: logger)
            try await projects.createProject(id: small, name: "Small")
            try await projects.createProject(id: large, name: "Large")
            try await zones.replaceZones(projectId: small, with: TestTrip.zones)
            try await zones.replaceZones(projectId: large, with: ZoneQuotaTests.document(zones: 50, fencesPerZone: 4))

            let catalog = ZoneCatalog(
                zones: zones, configuration: EngineConfiguration(), refreshInterval: .seconds(60), logger: logger)
            let before = try await catalog.engines()
            #expect(before.engine(for: large).fenceCount == 200)
            #expect(before.engine(for: small).fenceCount == 1)

            var moved = TestTrip.zones
            moved.zones[0].fences.append(ZoneQuotaTests.circle("second-door"))
            try await zones.replaceZones(projectId: small, with: moved)
            try await catalog.refresh()
            let after = try await catalog.engines()

            #expect(after.catalogVersion > before.catalogVersion)
            #expect(after.engine(for: small) !== before.engine(for: small))
            #expect(after.engine(for: small).fenceCount == 2)
            // Not rebuilt: the very same engine object.
            #expect(after.engine(for: large) === before.engine(for: large))

            // A project whose zones are emptied keeps no fence.
            try await zones.replaceZones(projectId: large, with: ZonesDocument(zones: []))
            try await catalog.refresh()
            let emptied = try await catalog.engines()
            #expect(emptied.engine(for: large).fenceCount == 0)
            #expect(emptied.engine(for: small) === after.engine(for: small))
        }
    }
}
