import ArgumentParser
import Foundation
import Geofence
import Logging
import Persistence
import ServiceSupport
import Shared

struct ZonesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "zones", abstract: "A project's zones: import, export, versions.",
        discussion: "Every import is kept as a numbered version of the project's zones, which `zones restore` makes current again.",
        subcommands: [Import.self, Export.self, Versions.self, Show.self, Restore.self])

    struct Import: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "import", abstract: "Replace a project's zones with a document.",
            discussion: "The document is validated first: one with a problem changes nothing.")
        @Option(help: "The project id.") var project: String
        @Argument(help: "The zones document (JSON).") var file: String
        @Flag(help: "Print what the import would add, remove and change, and the lint's warnings, without applying it.")
        var dryRun = false
        @Option(parsing: .unconditional, help: "Import only if the project's zones are at this version (`zones versions` lists them).")
        var ifVersion: Int64?

        func validate() throws {
            if let problem = InputLimits.identifierProblem(project) { throw CommandFailure("--project \(problem)", helpOf: Self.self) }
        }

        func run() async throws {
            let document = try loadZonesDocument(path: file)
            // The operator's import is not spaced out, but the project's quota holds as through the API.
            let excess = try ZoneQuota(environment: EnvironmentReader()).excess(of: document)
            guard excess.isEmpty else {
                throw CommandFailure("\(file): beyond the project's quota: " + excess.joined(separator: "; "), helpOf: Self.self)
            }
            let (project, expectedVersion) = (project, ifVersion)
            if dryRun {
                let (changes, version) = try await withDatabase { database, logger in
                    try await requireProject(project, of: Self.self, database: database, logger: logger)
                    let current = try await ZoneStore(database: database, logger: logger).currentZones(projectId: project)
                    if let expectedVersion, expectedVersion != current.version {
                        throw versionMismatch(expectedVersion, current: current.version, project: project)
                    }
                    return (try document.changes(from: current.document), current.version)
                }
                print("dry run: nothing was changed; against version \(version) of \(project) the import would change:")
                print("added:     " + (changes.added.isEmpty ? "-" : changes.added.joined(separator: ", ")))
                print("removed:   " + (changes.removed.isEmpty ? "-" : changes.removed.joined(separator: ", ")))
                print("changed:   " + (changes.changed.isEmpty ? "-" : changes.changed.joined(separator: ", ")))
                print("unchanged: \(changes.unchanged)")
            } else {
                let version = try await withDatabase { database, logger in
                    try await requireProject(project, of: Self.self, database: database, logger: logger)
                    return try await replaceZones(
                        of: project, with: document, expectedVersion: expectedVersion, database: database, logger: logger)
                }
                print(
                    "imported \(document.zones.count) zone(s) with \(document.zones.reduce(0) { $0 + $1.fences.count }) fence(s) into \(project) as version \(version)"
                )
            }
            try printLintWarnings(document)
        }
    }

    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "export", abstract: "Print a project's zones document.")
        @Option(help: "The project id.") var project: String

        func run() async throws {
            let project = project
            let document = try await withDatabase { database, logger in
                try await requireProject(project, of: Self.self, database: database, logger: logger)
                return try await ZoneStore(database: database, logger: logger).zones(projectId: project)
            }
            try printDocument(document)
        }
    }

    struct Versions: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "versions", abstract: "List a project's zones versions, newest first.")
        @Option(help: "The project id.") var project: String
        @Option(parsing: .unconditional, help: "How many (1 to 1000).") var limit: Int = 50
        @Option(parsing: .unconditional, help: "Older than this version (the `--cursor` a previous page printed).") var cursor: Int64?

        func validate() throws {
            guard (1...1000).contains(limit) else { throw CommandFailure("--limit must be between 1 and 1000", helpOf: Self.self) }
        }

        func run() async throws {
            let (project, limit, cursor) = (project, limit, cursor)
            let page = try await withDatabase { database, logger in
                // An empty list must mean no versions, not a misspelt project.
                try await requireProject(project, of: Self.self, database: database, logger: logger)
                return try await ZoneStore(database: database, logger: logger).versions(projectId: project, before: cursor, limit: limit)
            }
            print(
                StatusTable.table(
                    ["VERSION", "CREATED", "ZONES"],
                    page.versions.map { [String($0.version), RFC3339.format($0.createdAt), String($0.zoneCount)] }),
                terminator: "")
            if let next = page.nextCursor { print("(more: --cursor \(next))") }
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "show", abstract: "Print one version of a project's zones.")
        @Option(help: "The project id.") var project: String
        @Option(parsing: .unconditional, help: "The version (`zones versions` lists them).") var version: Int64

        func run() async throws {
            let (project, version) = (project, version)
            let document = try await withDatabase { database, logger in
                try await requireProject(project, of: Self.self, database: database, logger: logger)
                guard let document = try await ZoneStore(database: database, logger: logger).document(projectId: project, version: version)
                else { throw CommandFailure("--version \(version): project \(project) has no such zones version", helpOf: Self.self) }
                return document
            }
            try printDocument(document)
        }
    }

    struct Restore: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "restore", abstract: "Make an old version current, as a new version.",
            discussion: "The version is validated again (with today's validator and quota) before it is applied.")
        @Option(help: "The project id.") var project: String
        @Option(parsing: .unconditional, help: "The version to restore (`zones versions` lists them).") var version: Int64
        @Option(parsing: .unconditional, help: "Restore only if the project's zones are at this version.") var ifVersion: Int64?

        func run() async throws {
            let (project, restoredVersion, expectedVersion) = (project, version, ifVersion)
            let quota = try ZoneQuota(environment: EnvironmentReader())
            let (document, version) = try await withDatabase { database, logger in
                try await requireProject(project, of: Self.self, database: database, logger: logger)
                guard
                    let document = try await ZoneStore(database: database, logger: logger).document(
                        projectId: project, version: restoredVersion)
                else {
                    throw CommandFailure("--version \(restoredVersion): project \(project) has no such zones version", helpOf: Self.self)
                }
                let problems = ZoneValidator.validate(document).map { "\($0)" } + quota.excess(of: document)
                guard problems.isEmpty else {
                    throw CommandFailure(
                        "--version \(restoredVersion) is not valid today; nothing was changed:\n"
                            + problems.map { "  \($0)" }.joined(separator: "\n"))
                }
                let version = try await replaceZones(
                    of: project, with: document, expectedVersion: expectedVersion, database: database, logger: logger)
                return (document, version)
            }
            print("restored version \(restoredVersion) of \(project) (\(document.zones.count) zone(s)) as version \(version)")
            try printLintWarnings(document)
        }
    }
}

/// Replaces the project's zones as the operator asked (not spaced out, unlike the API), saying
/// which version the project is at when `--if-version` names another.
private func replaceZones(
    of project: String, with document: ZonesDocument, expectedVersion: Int64?, database: Database, logger: Logger
) async throws -> Int64 {
    do {
        return try await ZoneStore(database: database, logger: logger).replaceZones(
            projectId: project, with: document, expectedVersion: expectedVersion)
    } catch let mismatch as ZonesVersionMismatch {
        throw versionMismatch(expectedVersion ?? 0, current: mismatch.currentVersion, project: project)
    }
}

private func versionMismatch(_ expected: Int64, current: Int64, project: String) -> CommandFailure {
    CommandFailure("--if-version \(expected): the zones of \(project) are at version \(current); nothing was changed")
}

private func printDocument(_ document: ZonesDocument) throws {
    let encoder = WireJSON.encoder()
    encoder.outputFormatting.insert(.prettyPrinted)
    print(String(decoding: try encoder.encode(document), as: UTF8.self))
}

/// The fence lint's warnings, on standard error: they do not stop an import.
private func printLintWarnings(_ document: ZonesDocument) throws {
    let lint = try FenceLint.check(document)
    var warnings = lint.warnings.map { "warning: \($0)\n" }.joined()
    if lint.total > lint.warnings.count {
        warnings += "warning: \(lint.total - lint.warnings.count) more pair(s) of fences closer than 500 m\n"
    }
    FileHandle.standardError.write(Data(warnings.utf8))
}

/// Reads and validates a zones document, failing with messages that name the zone, fence and problem:
/// `zones import` and `replay` read their files with it, so that both refuse the same documents in the same words.
/// - Parameter name: how messages name the file: its path, or the option and path (`--zones zones.json`).
func loadZonesDocument(path: String, naming name: String? = nil) throws -> ZonesDocument {
    let name = name ?? path
    let data = try readInputFile(path, naming: name)
    let document: ZonesDocument
    do {
        document = try WireJSON.decoder().decode(ZonesDocument.self, from: data)
    } catch let failures as DecodingFailures {
        throw CommandFailure("\(name):\n" + DecodingErrorText.lines(failures).map { "  \($0)" }.joined(separator: "\n"))
    } catch {
        throw CommandFailure("\(name): \(DecodingErrorText.describe(error))")
    }
    let unknownMembers = try ZonesDocument.unknownMembers(of: document, in: data)
    let problems = unknownMembers.map { "\($0): is not a member of a zones document" } + ZoneValidator.validate(document).map { "\($0)" }
    guard problems.isEmpty else {
        throw CommandFailure("\(name):\n" + problems.map { "  \($0)" }.joined(separator: "\n"))
    }
    return document
}
