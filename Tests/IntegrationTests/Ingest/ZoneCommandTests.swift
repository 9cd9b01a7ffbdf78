import Foundation
import Shared
import Testing

/// Runs `checkin` with the harness's secret key (the database is the test process's).
private func checkin(_ arguments: [String], harness: PipelineHarness) async throws -> CommandOutcome {
    try await CommandOutcome.run(arguments, environment: ["CHECKIN_SECRET_KEY": harness.secretKey.base64])
}

/// Writes `document` to a file of its own and returns its path.
private func write(_ document: ZonesDocument, named name: String, harness: PipelineHarness) throws -> String {
    let directory = try harness.makeLogDirectory()
    let file = directory.appendingPathComponent("\(name).json")
    try WireJSON.encoder().encode(document).write(to: file)
    return file.path
}

/// `checkin zones import --dry-run` prints what the import would add, remove and change, and
/// the lint's warnings, and applies nothing; a stale `--if-version` is refused naming it.
@Test func zonesImportDryRunPrintsTheChangesAndAppliesNothing() async throws {
    let (harness, imported) = try await importingThreeZones()
    let project = harness.projectId
    #expect(imported.standardOutput.contains("as version 2"), "\(imported.standardOutput)")

    let proposed = try write(
        ZonesDocument(zones: [
            ZoneVersionTests.zone("zone-kept", metresEast: 10_000), ZoneVersionTests.zone("zone-cafe", metresEast: 0, name: "Renamed"),
            ZoneVersionTests.zone("zone-bakery", metresEast: 150),
        ]), named: "proposed", harness: harness)
    let dryRun = try await checkin(["zones", "import", "--project", project, proposed, "--dry-run"], harness: harness)
    #expect(dryRun.exitCode == 0, "\(dryRun.standardError)")
    let lines = dryRun.standardOutput.split(separator: "\n").map(String.init)
    #expect(lines.contains("added:     zone-bakery") && lines.contains("removed:   zone-old"), "\(lines)")
    #expect(lines.contains("changed:   zone-cafe") && lines.contains("unchanged: 1"), "\(lines)")
    #expect(lines.contains("  zone-cafe: name"), "\(lines)")
    #expect(dryRun.standardError.contains("warning: fence 'zone-"), "\(dryRun.standardError)")

    let exported = try await checkin(["zones", "export", "--project", project], harness: harness)
    #expect(try WireJSON.decoder().decode(ZonesDocument.self, from: Data(exported.standardOutput.utf8)) == ZoneVersionTests.threeZones)
    let versions = try await checkin(["zones", "versions", "--project", project], harness: harness)
    let rows = versions.standardOutput.split(separator: "\n").map { $0.split(separator: " ").first.map(String.init) }
    #expect(rows == ["VERSION", "2", "1"], "\(versions.standardOutput)")

    let stale = try await checkin(["zones", "import", "--project", project, proposed, "--if-version", "1"], harness: harness)
    #expect(stale.exitCode != 0)
    #expect(stale.standardError.contains("--if-version 1") && stale.standardError.contains("version 2"), "\(stale.standardError)")
    let current = try await checkin(["zones", "import", "--project", project, proposed, "--if-version", "2"], harness: harness)
    #expect(current.exitCode == 0 && current.standardOutput.contains("as version 3"), "\(current.standardError)")
}

/// `checkin zones restore` makes an old version the project's zones again, as a new version;
/// `zones show` prints a version's document; an unknown version is refused naming it.
@Test func zonesRestoreMakesAnOldVersionCurrentAsANewOne() async throws {
    let (harness, imported) = try await importingThreeZones()
    let project = harness.projectId

    let restored = try await checkin(["zones", "restore", "--project", project, "--version", "1"], harness: harness)
    #expect(restored.exitCode == 0, "\(restored.standardError)")
    #expect(
        restored.standardOutput.contains("restored version 1") && restored.standardOutput.contains("as version 3"),
        "\(restored.standardOutput)")
    for version in ["1", "3"] {
        let shown = try await checkin(["zones", "show", "--project", project, "--version", version], harness: harness)
        #expect(try WireJSON.decoder().decode(ZonesDocument.self, from: Data(shown.standardOutput.utf8)) == TestTrip.zones)
    }
    let exported = try await checkin(["zones", "export", "--project", project], harness: harness)
    #expect(try WireJSON.decoder().decode(ZonesDocument.self, from: Data(exported.standardOutput.utf8)) == TestTrip.zones)

    for verb in ["restore", "show"] {
        let unknown = try await checkin(["zones", verb, "--project", project, "--version", "9"], harness: harness)
        #expect(unknown.exitCode != 0)
        #expect(unknown.standardError.contains("--version 9"), "\(verb): \(unknown.standardError)")
    }
    let stale = try await checkin(["zones", "restore", "--project", project, "--version", "2", "--if-version", "2"], harness: harness)
    #expect(stale.exitCode != 0 && stale.standardError.contains("version 3"), "\(stale.standardError)")
}

/// A project of its own with the three zones imported by `checkin zones import` (its version 2).
private func importingThreeZones() async throws -> (PipelineHarness, CommandOutcome) {
    let harness = PipelineHarness()
    try await harness.prepare()
    let imported = try await checkin(
        ["zones", "import", "--project", harness.projectId, try write(ZoneVersionTests.threeZones, named: "three", harness: harness)],
        harness: harness)
    #expect(imported.exitCode == 0, "\(imported.standardError)")
    return (harness, imported)
}
