import ArgumentParser
import CommandSupport

struct IngestCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ingest",
        abstract: "Run the HTTP ingest service.",
        discussion: """
            Serves POST /v1/fixes, the management API, /health, /ready and /metrics. \
            Listens on CHECKIN_HTTP_HOST:CHECKIN_HTTP_PORT (default 127.0.0.1:8080).
            """)

    func run() async throws {
        try await Pipeline(settings: try ProcessSettings(), stages: .ingest, logger: try ProcessBootstrap.logger("checkin.ingest")).run()
    }
}

struct EvaluatorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "evaluator",
        abstract: "Run an evaluator worker: fixes in, events out.",
        discussion:
            "Its events are check-ins and check-outs. Workers share the partitions of checkin.fixes in one consumer group; run as many as needed. /health, /ready and /metrics on CHECKIN_HTTP_PORT (default 8081)."
    )

    func run() async throws {
        try await Pipeline(settings: try ProcessSettings(), stages: .evaluator, logger: try ProcessBootstrap.logger("checkin.evaluator"))
            .run()
    }
}

struct NotifierCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "notifier",
        abstract: "Run the notifier: events in, webhooks out.",
        discussion:
            "Signs and sends the webhooks, retrying those that fail. /health, /ready and /metrics on CHECKIN_HTTP_PORT (default 8082).")

    func run() async throws {
        try await Pipeline(settings: try ProcessSettings(), stages: .notifier, logger: try ProcessBootstrap.logger("checkin.notifier"))
            .run()
    }
}

struct DevCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dev",
        abstract: "Run the whole pipeline in one process, locally.",
        discussion: """
            Runs ingest, evaluator and notifier against the local Postgres and broker. \
            Uses short consumer-group timeouts suited to the embedded local broker unless CHECKIN_KAFKA_*_MS say otherwise. \
            Allows webhooks to this machine over http (CHECKIN_WEBHOOK_ALLOW_PRIVATE, CHECKIN_WEBHOOK_ALLOW_HTTP default to true) \
            and, without CHECKIN_SECRET_KEY, seals webhook secrets with a local key kept in the database.
            """)

    func run() async throws {
        try await Pipeline(
            settings: try ProcessSettings(localBroker: true, localDevelopment: true), stages: .all,
            logger: try ProcessBootstrap.logger("checkin.dev")
        ).run()
    }
}
