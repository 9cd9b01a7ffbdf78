import ArgumentParser
import CommandSupport
import Foundation
import Ingest
import Logging
import Persistence
import ServiceSupport
import Shared

/// Runs `body` against the configured database (`withConfiguredDatabase`).
///
/// With `CHECKIN_API_URL` set and no `CHECKIN_DATABASE_URL`, refused: the commands the API
/// serves go through it, and a local Postgres (the default) is not the remote deployment's.
func withDatabase<Result: Sendable>(_ body: @Sendable (Database, Logger) async throws -> Result) async throws -> Result {
    if let remote = try RemoteSettings.fromEnvironment(), !remote.databaseConfigured {
        throw CommandFailure(
            "this command works on the database directly, and CHECKIN_API_URL (\(remote.baseURL)) is set without CHECKIN_DATABASE_URL")
    }
    return try await withConfiguredDatabase(body)
}

struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate", abstract: "Apply the database migrations.",
        discussion: "Those that the database of CHECKIN_DATABASE_URL lacks.")

    func run() async throws {
        try requireDatabaseAccess(Self.self)
        let logger = try ProcessBootstrap.logger("checkin.migrate")
        let settings = try ProcessSettings()
        let applied = try await Database.withTemporaryClient(configuration: settings.database, logger: logger) { database in
            try await database.waitUntilReachable(timeout: .seconds(8))
            return try await Migrator(database: database, logger: logger).migrate()
        }
        print(applied.isEmpty ? "schema is up to date (\(Migration.all.count) migrations)" : "applied migrations \(applied)")
    }
}

struct ProjectsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "projects", abstract: "Create and list projects (keys: checkin keys).",
        subcommands: [Create.self, CreateKey.self, List.self])

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List every project.")

        func run() async throws {
            let projects = try await projectsBackend(of: Self.self).projects()
            print(
                StatusTable.table(
                    ["ID", "NAME", "CREATED"], projects.map { [$0.id, $0.name, RFC3339.format($0.createdAt)] }), terminator: "")
        }
    }

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "create", abstract: "Create a project and print its two keys.",
            discussion: """
                Prints a device key and a management key. A project that exists is refused: \
                `keys create` gives it another key.
                """)
        @Argument(help: "The project id: 1 to 64 letters, digits, '-', '_' or '.', starting with a letter or digit.")
        var id: String
        @Option(help: "A display name (the id when absent).") var name: String?

        func validate() throws {
            if let problem = InputLimits.projectIdProblem(id) { throw CommandFailure("the project id \(problem)", helpOf: Self.self) }
            if let name, let problem = InputLimits.textProblem(name, maximumLength: 200) {
                throw CommandFailure("--name \(problem)", helpOf: Self.self)
            }
        }

        func run() async throws {
            let created = try await projectsBackend(of: Self.self).create(id: id, name: name)
            let (deviceKey, managementKey) = (created.deviceKey.key ?? "-", created.managementKey.key ?? "-")
            print("project:        \(id)\ndevice key:     \(deviceKey)\nmanagement key: \(managementKey)")
            print("(keys are shown only now; store them)")
        }
    }

    /// The older spelling of `checkin keys create`, kept for scripts that use it: it runs
    /// that command (the key's id printed with it, so that it can be revoked) and says so.
    struct CreateKey: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "create-key", abstract: "Create another API key for a project (now `checkin keys create`).",
            shouldDisplay: false)
        @Argument(help: "The project id.") var id: String
        @Option(help: "device or management.") var kind: String = "device"

        func run() async throws {
            FileHandle.standardError.write(
                Data("note: `checkin projects create-key` is `checkin keys create --project \(id) --kind \(kind)`\n".utf8))
            let create = try KeysCommand.Create.parse(["--project", id, "--kind", kind])
            try await create.run()
        }
    }
}

struct DeliveriesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "deliveries", abstract: "Inspect and replay webhook deliveries.",
        subcommands: [List.self, Show.self, Replay.self])

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List a project's latest deliveries.")
        @Option(help: "The project id.") var project: String
        @Option(help: "pending, retrying (pending, attempted at least once), delivered, failed or cancelled.") var status: String?
        @Option(help: "Only the deliveries to this webhook endpoint (`we_…`; one the project does not have lists none).")
        var endpoint: String?
        @Option(help: "Only the deliveries of this device's events.") var device: String?
        @Option(parsing: .unconditional, help: "How many (1 to 1000).") var limit: Int = 50
        @Option(parsing: .unconditional, help: "Older than this delivery id (the `--cursor` a previous page printed).") var cursor: Int64?

        func validate() throws {
            guard (1...1000).contains(limit) else { throw CommandFailure("--limit must be between 1 and 1000", helpOf: Self.self) }
        }

        func run() async throws {
            if let status, DeliveryListFilter(status) == nil {
                throw CommandFailure("--status must be \(DeliveryListFilter.names)", helpOf: Self.self)
            }
            let page = try await webhooksBackend(project: project, of: Self.self).deliveries(
                status: status, endpointId: endpoint, deviceId: device, before: cursor, limit: limit)
            print(
                StatusTable.table(
                    ["ID", "STATUS", "EVENT", "DEVICE", "SEQ", "ENDPOINT", "ATTEMPTS", "QUEUED", "DELIVERED", "LAST ERROR"],
                    page.items.map { delivery in
                        [
                            DeliveryIdentifier.text(delivery.id), delivery.status.rawValue, delivery.eventType, delivery.deviceId,
                            delivery.sequence.map(String.init) ?? "-", delivery.endpointId, String(delivery.attempts),
                            RFC3339.format(delivery.createdAt), delivery.deliveredAt.map(RFC3339.format) ?? "-",
                            delivery.lastError ?? "",
                        ]
                    }), terminator: "")
            if let next = page.nextCursor { print("(more: --cursor \(next))") }
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "show", abstract: "Show a delivery and every attempt made.",
            discussion: """
                A replay counts the attempts from 1 again (the retry back-off starts over), so the \
                attempts of a replayed delivery are shown in rounds: round 1 from when it was queued, \
                each later round from a replay. The payload is the exact body every attempt sends.
                """)
        @Option(help: "The project id.") var project: String
        @Argument(help: "The delivery id (dlv_42, or 42).") var delivery: DeliveryArgument
        @Flag(help: "Print only the payload, byte for byte (to pipe into jq or check a signature).") var payload = false

        func run() async throws {
            let id = delivery.number
            let detail = try await webhooksBackend(project: project, of: Self.self).delivery(id: id)
            let name = DeliveryIdentifier.text(id)
            if payload {
                guard let body = detail.payload else { throw CommandFailure("delivery \(name): its payload was erased with its device") }
                // No line break after it: the bytes are those signed, as a signature check needs them.
                return FileHandle.standardOutput.write(Data(body.utf8))
            }
            print(DeliveryText.describe(detail))
        }
    }

    struct Replay: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "replay",
            abstract: "Send deliveries again.",
            discussion: "Deliveries given together are queued together, so each device's go out in sequence order.")
        @Option(help: "The project id.") var project: String
        @Flag(help: "Every failed delivery of the project.") var failed = false
        @Argument(help: "Delivery ids (dlv_42, or 42).") var deliveries: [DeliveryArgument] = []
        var ids: [Int64] { deliveries.map(\.number) }

        func validate() throws {
            if failed && !ids.isEmpty { throw CommandFailure("give delivery ids or --failed, not both", helpOf: Self.self) }
            if !failed && ids.isEmpty { throw CommandFailure("give the delivery ids to replay, or --failed", helpOf: Self.self) }
        }

        func run() async throws {
            let webhooks = try webhooksBackend(project: project, of: Self.self)
            let replayed = failed ? try await webhooks.replayFailed() : try await webhooks.replay(ids: ids)
            print("\(replayed.replayed) deliveries queued again")
            if !replayed.disabledEndpoints.isEmpty {
                print(
                    "disabled, so their deliveries wait until enabled (checkin webhooks enable): "
                        + replayed.disabledEndpoints.joined(separator: ", "))
            }
        }
    }
}

/// A delivery named on the command line: its identifier (`dlv_42`), or, as typed by a
/// person reading a list, its number alone.
struct DeliveryArgument: ExpressibleByArgument {
    var number: Int64

    init?(argument: String) {
        guard let number = DeliveryIdentifier.number(argument, bareNumber: true) else { return nil }
        self.number = number
    }
}
