import Foundation
import Logging
import Persistence
import Shared
import Testing

/// `checkin demo` replaces its project's zones and webhook endpoints, so a project of its id
/// that someone else made is refused before anything of it is touched.
@Test func theDemoLeavesAProjectItDidNotMakeAlone() async throws {
    let logger = Logger.forTests("test.demo")
    let url = try await freshDatabaseURL(logger: logger)
    let mine = ZonesDocument(zones: [ZoneVersionTests.zone("zone-mine", metresEast: 0)])
    try await withMigratedDatabase(url: url, logger: logger) { database in
        _ = try await ProjectStore(database: database, logger: logger).createProjectWithKeys(id: "demo", name: "demo")
        _ = try await ZoneStore(database: database, logger: logger).replaceZones(projectId: "demo", with: mine)
    }
    let outcome = try await CommandOutcome.run(
        ["demo", "--once", "--timeout", "30"],
        environment: [
            "CHECKIN_DATABASE_URL": url, "CHECKIN_SECRET_KEY": PipelineHarness.sharedSecretKey.base64,
            "CHECKIN_HTTP_PORT": String(try freePort()),
        ])
    #expect(outcome.exitCode != 0)
    #expect(
        outcome.standardError.contains("project 'demo' exists and was not made by checkin demo (its name is 'demo')"),
        "\(outcome.standardError)")
    let (zones, project) = try await withMigratedDatabase(url: url, logger: logger) { database in
        (
            try await ZoneStore(database: database, logger: logger).zones(projectId: "demo"),
            try await ProjectStore(database: database, logger: logger).project(id: "demo")
        )
    }
    #expect(zones == mine)
    #expect(project?.name == "demo")
}
