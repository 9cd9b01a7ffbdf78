import ArgumentParser

struct IngestCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ingest",
        abstract: "Run the HTTP ingest service: POST /v1/fixes, the management API, /health, /ready, /metrics.",
        discussion: "Listens on CHECKIN_HTTP_HOST:CHECKIN_HTTP_PORT (default 127.0.0.1:8080).")

    func run() async throws {
        try await Pipeline(settings: try ProcessSettings(), stages: .ingest, logger: ProcessBootstrap.logger("checkin.ingest")).run()
    }
}

struct EvaluatorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "evaluator",
        abstract: "Run an evaluator worker: fixes in, check-in/check-out events out.",
        discussion:
            "Workers share the partitions of checkin.fixes in one consumer group; run as many as needed. /health, /ready and /metrics on CHECKIN_HTTP_PORT (default 8081)."
    )

    func run() async throws {
        try await Pipeline(settings: try ProcessSettings(), stages: .evaluator, logger: ProcessBootstrap.logger("checkin.evaluator")).run()
    }
}

struct NotifierCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "notifier",
        abstract: "Run the notifier: events in, signed webhooks out, with retries.",
        discussion: "/health, /ready and /metrics on CHECKIN_HTTP_PORT (default 8082).")

    func run() async throws {
        try await Pipeline(settings: try ProcessSettings(), stages: .notifier, logger: ProcessBootstrap.logger("checkin.notifier")).run()
    }
}

struct DevCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dev",
        abstract: "Run ingest, evaluator and notifier in one process against the local Postgres and broker.",
        discussion: """
            Uses short consumer-group timeouts suited to the embedded local broker unless CHECKIN_KAFKA_*_MS say otherwise. \
            Allows webhooks to this machine over http (CHECKIN_WEBHOOK_ALLOW_PRIVATE, CHECKIN_WEBHOOK_ALLOW_HTTP default to true) \
            and, without CHECKIN_SECRET_KEY, seals webhook secrets with a local key kept in the database.
            """)

    func run() async throws {
        try await Pipeline(
            settings: try ProcessSettings(localBroker: true, localDevelopment: true), stages: .all,
            logger: ProcessBootstrap.logger("checkin.dev")
        ).run()
    }
}
