import ArgumentParser
import CommandSupport
import Foundation
import Geofence
import Ingest
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
        @Option(help: "Why the zones change, kept with the new version (`zones versions` shows it; up to 200 characters).")
        var message: String?

        func validate() throws {
            if let problem = InputLimits.identifierProblem(project) { throw CommandFailure("--project \(problem)", helpOf: Self.self) }
            if let message, let problem = ZonesVersionMessage.problem(with: message) {
                throw CommandFailure("--message \(problem)", helpOf: Self.self)
            }
        }

        func run() async throws {
            let zones = try zonesBackend(project: project, of: Self.self)
            if dryRun {
                let (changes, version) = try await zones.preview(file, expectedVersion: ifVersion)
                print("dry run: nothing was changed; against version \(version) of \(project) the import would change:")
                print("added:     " + (changes.added.isEmpty ? "-" : changes.added.joined(separator: ", ")))
                print("removed:   " + (changes.removed.isEmpty ? "-" : changes.removed.joined(separator: ", ")))
                print("changed:   " + (changes.changed.isEmpty ? "-" : changes.changed.joined(separator: ", ")))
                for id in changes.changed {
                    guard let members = changes.changedMembers?[id], !members.isEmpty else { continue }
                    print("  \(id): " + members.joined(separator: ", "))
                }
                print("unchanged: \(changes.unchanged)")
                printLintWarnings(changes.warnings, total: changes.warningCount)
            } else {
                let (replaced, fences) = try await zones.replace(with: file, expectedVersion: ifVersion, message: message)
                print("imported \(replaced.zones) zone(s) with \(fences) fence(s) into \(project) as version \(replaced.version)")
                printLintWarnings(replaced.warnings, total: replaced.warningCount)
            }
        }
    }

    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "export", abstract: "Print a project's zones document.")
        @Option(help: "The project id.") var project: String

        func run() async throws {
            try printDocument(try await zonesBackend(project: project, of: Self.self).current())
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
            let page = try await zonesBackend(project: project, of: Self.self).versions(before: cursor, limit: limit)
            print(
                StatusTable.table(
                    ["VERSION", "CREATED", "ZONES", "AUTHOR", "MESSAGE"],
                    page.items.map {
                        [String($0.version), RFC3339.format($0.createdAt), String($0.zoneCount), $0.author ?? "-", $0.message ?? ""]
                    }),
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
            try printDocument(try await zonesBackend(project: project, of: Self.self).document(version: version))
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
            let replaced = try await zonesBackend(project: project, of: Self.self).restore(version: version, expectedVersion: ifVersion)
            print("restored version \(version) of \(project) (\(replaced.zones) zone(s)) as version \(replaced.version)")
            printLintWarnings(replaced.warnings, total: replaced.warningCount)
        }
    }
}

private func printDocument(_ document: ZonesDocument) throws {
    let encoder = WireJSON.encoder()
    encoder.outputFormatting.insert(.prettyPrinted)
    print(String(decoding: try encoder.encode(document), as: UTF8.self))
}

/// The fence lint's warnings (the first of them, and how many in all), on standard error:
/// they do not stop an import.
private func printLintWarnings(_ listed: [FenceProximity], total: Int) {
    var warnings = listed.map { "warning: \($0)\n" }.joined()
    if total > listed.count {
        warnings += "warning: \(total - listed.count) more pair(s) of fences closer than 500 m\n"
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
