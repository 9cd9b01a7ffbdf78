import ArgumentParser
import CommandSupport
import Foundation
import Ingest
import Persistence
import ServiceSupport
import Shared

/// Runs `body` with the webhook store of the configured database, sealing secrets with
/// `CHECKIN_SECRET_KEY` or, when it is unset, the local key `checkin dev` or `demo` made.
///
/// With `project`, a command about one project runs `body` only once the project is known to
/// exist (on the same connection).
func withWebhookStore<Result: Sendable>(
    project: String? = nil, of command: (any ParsableCommand.Type)? = nil,
    _ body: @Sendable (WebhookStore) async throws -> Result
) async throws -> Result {
    let configured = try EnvironmentReader().secretEncryptionKey()
    return try await withDatabase { database, logger in
        if let project, let command { try await requireProject(project, of: command, database: database, logger: logger) }
        return try await body(WebhookStore.sealing(with: configured, database: database, logger: logger))
    }
}

struct WebhooksCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "webhooks", abstract: "Manage a project's webhook endpoints.",
        discussion: """
            URLs must be https to a public address; `webhooks add --local` (or CHECKIN_WEBHOOK_ALLOW_HTTP=true and \
            CHECKIN_WEBHOOK_ALLOW_PRIVATE=true) lifts that for local set-ups, as checkin dev and POST /v1/webhooks on it do.
            """,
        subcommands: [Add.self, List.self, Disable.self, Enable.self, RotateSecret.self, Remove.self])

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "add", abstract: "Add an endpoint and print its signing secret.")
        @Option(help: "The project id.") var project: String
        @Option(help: "The partner's URL.") var url: String
        @Option(help: "A whsec_… secret of 24 to 64 bytes (default: a new random one).") var secret: String?
        @Flag(
            help: """
                Allow http and private addresses, as checkin dev does, for a partner on this machine or network \
                (a notifier delivers to it only if it allows them too).
                """)
        var local = false

        func run() async throws {
            let secret = try newSecret(secret, helpOf: Self.self)
            let endpoint = try await webhooksBackend(project: project, of: Self.self).add(url: url, secret: secret, local: local)
            print("endpoint: \(endpoint.id)\nurl:      \(endpoint.url)\nsecret:   \(endpoint.secret ?? secret)")
            print("(the secret is shown only now; give it to the partner)")
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list", abstract: "List a project's endpoints and their state.",
            discussion: "Secrets are never shown: they are printed only when made.")
        @Option(help: "The project id.") var project: String

        func run() async throws {
            let endpoints = try await webhooksBackend(project: project, of: Self.self).endpoints()
            if endpoints.isEmpty { print("no webhook endpoints in project \(project)") }
            for endpoint in endpoints { print(describe(endpoint)) }
        }
    }

    struct Disable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "disable", abstract: "Stop deliveries to an endpoint.",
            discussion: "Its events keep queueing; they go out once it is enabled again.")
        @Option(help: "The project id.") var project: String
        @Option(help: "Why, for whoever lists the endpoints later.") var reason: String = "disabled with the checkin CLI"
        @Argument(help: "The endpoint id.") var id: String

        func run() async throws {
            print(describe(try await webhooksBackend(project: project, of: Self.self).disable(id: id, reason: reason)))
        }
    }

    struct Enable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "enable", abstract: "Let deliveries go to an endpoint again.",
            discussion: "Failed deliveries stay failed: `checkin deliveries replay --failed` queues them again.")
        @Option(help: "The project id.") var project: String
        @Argument(help: "The endpoint id.") var id: String

        func run() async throws {
            print(describe(try await webhooksBackend(project: project, of: Self.self).enable(id: id)))
        }
    }

    struct RotateSecret: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rotate-secret",
            abstract: "Give an endpoint a new secret and print it.",
            discussion:
                "The old secret keeps signing for the rotation window: CHECKIN_WEBHOOK_SECRET_ROTATION_WINDOW seconds (default 86400).")
        @Option(help: "The project id.") var project: String
        @Option(help: "A whsec_… secret of 24 to 64 bytes (default: a new random one).") var secret: String?
        @Argument(help: "The endpoint id.") var id: String

        func run() async throws {
            let secret = try newSecret(secret, helpOf: Self.self)
            let rotated = try await webhooksBackend(project: project, of: Self.self).rotateSecret(id: id, secret: secret)
            print("endpoint: \(id)\nsecret:   \(rotated.secret ?? secret)")
            if let expires = rotated.previousSecretExpiresAt {
                print("(the previous secret signs too until \(RFC3339.format(expires)); the new one is shown only now)")
            }
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "remove", abstract: "Delete an endpoint and its queued deliveries.")
        @Option(help: "The project id.") var project: String
        @Argument(help: "The endpoint id.") var id: String

        func run() async throws {
            try await webhooksBackend(project: project, of: Self.self).remove(id: id)
            print("endpoint \(id) removed")
        }
    }
}

/// The given secret if it is a valid new one, or a generated one.
private func newSecret(_ given: String?, helpOf command: any ParsableCommand.Type) throws -> String {
    guard let given else { return WebhookSecret.generate() }
    guard (try? WebhookSecret.validateNew(given)) != nil else {
        throw CommandFailure("--secret must be whsec_ followed by the base64 of 24 to 64 random bytes", helpOf: command)
    }
    return given
}

private func describe(_ endpoint: WebhookEndpointView) -> String {
    var line = "\(endpoint.id)  \(endpoint.enabled ? "enabled " : "disabled")  \(endpoint.url)"
    if !endpoint.enabled {
        line += "  (since \(endpoint.disabledAt.map(RFC3339.format) ?? "?"): \(endpoint.disabledReason ?? "no reason given"))"
    }
    if let expires = endpoint.previousSecretExpiresAt { line += "  (rotating secrets until \(RFC3339.format(expires)))" }
    return line
}
