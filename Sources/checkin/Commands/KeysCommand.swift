import ArgumentParser
import CommandSupport
import Foundation
import Persistence
import ServiceSupport
import Shared

/// A project's API keys, as `GET/POST/DELETE /v1/keys` manage them, for the operator with
/// database access. A revocation here reaches running ingest processes when their cached
/// answer for the key expires (at most 30 s).
struct KeysCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys", abstract: "A project's API keys: list, create, revoke, rotate.",
        subcommands: [List.self, Create.self, Revoke.self, Rotate.self])

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list", abstract: "List a project's keys (never the keys themselves).")
        @Option(help: "The project id.") var project: String

        func run() async throws {
            let keys = try await keysBackend(project: project, of: Self.self).keys()
            print(
                StatusTable.table(
                    ["ID", "PREFIX", "KIND", "NAME", "CREATED", "LAST USED", "EXPIRES", "REVOKED"],
                    keys.map { key in
                        [
                            key.id, key.prefix.map { $0 + "…" } ?? "-", key.kind.rawValue, key.name ?? "-",
                            RFC3339.format(key.createdAt),
                            key.lastUsedAt.map(RFC3339.format) ?? "-", key.expiresAt.map(RFC3339.format) ?? "-",
                            key.revokedAt.map(RFC3339.format) ?? "-",
                        ]
                    }), terminator: "")
        }
    }

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "create", abstract: "Create a key and print it (shown only now).")
        @Option(help: "The project id.") var project: String
        @Option(help: "device or management.") var kind: String
        @Option(help: "What the key's holders call it (ios-app, ci), shown when keys are listed.") var name: String?

        func validate() throws {
            guard ProjectStore.KeyKind(rawValue: kind) != nil else {
                throw CommandFailure("--kind must be device or management", helpOf: Self.self)
            }
            if let name, let problem = InputLimits.textProblem(name, maximumLength: 200) {
                throw CommandFailure("--name \(problem)", helpOf: Self.self)
            }
        }

        func run() async throws {
            let kind = ProjectStore.KeyKind(rawValue: kind) ?? .device
            let issued = try await keysBackend(project: project, of: Self.self).create(kind: kind, name: name)
            print("id:   \(issued.id)\nkind: \(issued.kind.rawValue)" + (issued.name.map { "\nname: \($0)" } ?? "") + "\nkey:  \(issued.key ?? "-")")
            print("(the key is shown only now; store it)")
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "revoke", abstract: "Revoke a key: it stops working.",
            discussion: "Running ingest processes refuse it within 30 s (the time they cache a key's answer).")
        @Option(help: "The project id.") var project: String
        @Argument(help: "The key id (key_…).") var id: String

        func run() async throws {
            try await keysBackend(project: project, of: Self.self).revoke(id: id)
            print("revoked \(id)")
        }
    }

    struct Rotate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rotate", abstract: "Replace a key by a new one of the same kind.",
            discussion: "The old key keeps working for --overlap seconds, so that clients can move without a gap.")
        @Option(help: "The project id.") var project: String
        @Option(parsing: .unconditional, help: "Seconds the old key keeps working (0: it stops at once).")
        var overlap: Int = ProjectStore.defaultRotationOverlapSeconds
        @Argument(help: "The key id (key_…).") var id: String

        func validate() throws {
            guard (0...ProjectStore.maximumRotationOverlapSeconds).contains(overlap) else {
                throw CommandFailure("--overlap must be between 0 and \(ProjectStore.maximumRotationOverlapSeconds)", helpOf: Self.self)
            }
        }

        func run() async throws {
            let new = try await keysBackend(project: project, of: Self.self).rotate(id: id, overlapSeconds: overlap)
            print("id:   \(new.id)\nkind: \(new.kind.rawValue)\nkey:  \(new.key ?? "-")")
            print("(the key is shown only now; store it)")
            print("\(new.replacedKeyId ?? id) works until \(new.replacedKeyExpiresAt.map(RFC3339.format) ?? "-")")
        }
    }
}

/// Runs `body` with the project store, once the project is known to exist: an unknown
/// project is named, never taken for one without keys.
func withProjects<Result: Sendable>(
    _ project: String, of command: any ParsableCommand.Type, _ body: @Sendable (ProjectStore) async throws -> Result
) async throws -> Result {
    try await withDatabase { database, logger in
        try await requireProject(project, of: command, database: database, logger: logger)
        return try await body(ProjectStore(database: database, logger: logger))
    }
}
