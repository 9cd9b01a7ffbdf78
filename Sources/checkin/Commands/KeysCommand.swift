import ArgumentParser
import Foundation
import Persistence
import ServiceSupport
import Shared

/// A project's API keys, as `GET/POST/DELETE /v1/keys` manage them, for the operator with
/// database access. A revocation here reaches running ingest processes when their cached
/// answer for the key expires (at most 30 s).
struct KeysCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys", abstract: "List, create, revoke and rotate a project's API keys.",
        subcommands: [List.self, Create.self, Revoke.self, Rotate.self])

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list", abstract: "List a project's keys (their first characters, never the keys).")
        @Option(help: "The project id.") var project: String

        func run() async throws {
            let project = project
            let keys = try await withProjects(project) { projects in try await projects.keys(projectId: project) }
            print(
                StatusTable.table(
                    ["ID", "PREFIX", "KIND", "CREATED", "LAST USED", "EXPIRES", "REVOKED"],
                    keys.map { key in
                        [
                            key.id, key.prefix.map { $0 + "…" } ?? "-", key.kind.rawValue, RFC3339.format(key.createdAt),
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

        func validate() throws {
            guard ProjectStore.KeyKind(rawValue: kind) != nil else { throw ValidationError("--kind must be device or management") }
        }

        func run() async throws {
            let (project, kind) = (project, ProjectStore.KeyKind(rawValue: kind) ?? .device)
            let issued = try await withProjects(project) { projects in try await projects.issueKey(projectId: project, kind: kind) }
            print("id:   \(issued.record.id)\nkind: \(kind.rawValue)\nkey:  \(issued.key)")
            print("(the key is shown only now; store it)")
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "revoke", abstract: "Revoke a key: it stops working (within 30 s on running ingest processes).")
        @Option(help: "The project id.") var project: String
        @Argument(help: "The key id (key_…).") var id: String

        func run() async throws {
            let (project, id) = (project, id)
            let outcome = try await withProjects(project) { projects in try await projects.revokeKey(id: id, projectId: project) }
            switch outcome {
            case .revoked: print("revoked \(id)")
            case .notFound: throw ValidationError("no key '\(id)' in project '\(project)'")
            case .lastManagementKey:
                throw ValidationError(
                    "'\(id)' is the last management key of '\(project)'; `checkin keys create --project \(project) --kind management` first"
                )
            }
        }
    }

    struct Rotate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rotate", abstract: "Replace a key by a new one of the same kind; the old one works for the overlap.")
        @Option(help: "The project id.") var project: String
        @Option(help: "Seconds the old key keeps working (0: it stops at once).")
        var overlap: Int = ProjectStore.defaultRotationOverlapSeconds
        @Argument(help: "The key id (key_…).") var id: String

        func validate() throws {
            guard (0...ProjectStore.maximumRotationOverlapSeconds).contains(overlap) else {
                throw ValidationError("--overlap must be between 0 and \(ProjectStore.maximumRotationOverlapSeconds)")
            }
        }

        func run() async throws {
            let (project, id, overlap) = (project, id, overlap)
            let outcome = try await withProjects(project) { projects in
                try await projects.rotateKey(id: id, projectId: project, overlap: .seconds(overlap))
            }
            switch outcome {
            case .rotated(let new, let old):
                print("id:   \(new.record.id)\nkind: \(new.record.kind.rawValue)\nkey:  \(new.key)")
                print("(the key is shown only now; store it)")
                print("\(old.id) works until \(old.expiresAt.map(RFC3339.format) ?? "-")")
            case .notFound: throw ValidationError("no key '\(id)' in project '\(project)'")
            case .notActive: throw ValidationError("key '\(id)' is revoked or expired; `checkin keys create` makes a new one")
            }
        }
    }
}

/// Runs `body` with the project store, once the project is known to exist: an unknown
/// project is named, never taken for one without keys.
func withProjects<Result: Sendable>(_ project: String, _ body: @Sendable (ProjectStore) async throws -> Result) async throws -> Result {
    try await withDatabase { database, logger in
        let projects = ProjectStore(database: database, logger: logger)
        guard try await projects.projectExists(project) else { throw ValidationError("no project '\(project)'") }
        return try await body(projects)
    }
}
