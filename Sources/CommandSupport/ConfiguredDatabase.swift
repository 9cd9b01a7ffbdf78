import Logging
import Persistence
import ServiceSupport
import Shared

/// Runs `body` against the database `CHECKIN_DATABASE_URL` names, once it answers and its
/// migrations are applied, with a quiet logger: commands print their results, not the pool's
/// chatter.
package func withConfiguredDatabase<Result: Sendable>(
    _ body: @Sendable (Database, Logger) async throws -> Result
) async throws -> Result {
    let logger = {
        var logger = Logger(label: "checkin.cli")
        logger.logLevel = .warning
        return logger
    }()
    let settings = try ProcessSettings()
    return try await Database.withTemporaryClient(configuration: settings.database, logger: logger) { database in
        try await database.waitUntilReachable(timeout: .seconds(8))
        try await Migrator(database: database, logger: logger).migrate()
        return try await body(database, logger)
    }
}

/// Runs `body` with the webhook store of the configured database (`withConfiguredDatabase`).
package func withConfiguredWebhookStore<Result: Sendable>(
    _ body: @Sendable (WebhookStore) async throws -> Result
) async throws -> Result {
    let configuredKey = try EnvironmentReader().secretEncryptionKey()
    return try await withConfiguredDatabase { database, logger in
        try await body(WebhookStore.sealing(with: configuredKey, database: database, logger: logger))
    }
}

extension WebhookStore {
    /// The webhook store of `database`, sealing secrets with `configuredKey`
    /// (`CHECKIN_SECRET_KEY`) or, when it is unset, the local key `checkin dev` or `demo` made.
    package static func sealing(with configuredKey: SecretEncryptionKey?, database: Database, logger: Logger) async throws
        -> WebhookStore
    {
        let sealer = try await SecretKeyStore(database: database, logger: logger).sealer(
            configured: configuredKey, fallback: .existingLocal)
        return WebhookStore(database: database, logger: logger, sealer: sealer)
    }
}
