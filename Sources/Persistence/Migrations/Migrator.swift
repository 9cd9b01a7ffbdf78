import Logging
import PostgresNIO

/// Applies the migrations a database lacks, each in its own transaction, under an
/// advisory lock so that services starting together do not race.
///
/// Versions the database has that it was not given are left alone: a newer release
/// applied them, and this one runs against its schema during a rolling upgrade.
package struct Migrator: Sendable {
    /// An arbitrary constant naming this project's migration lock.
    static let advisoryLockKey: Int64 = 0x6368_6563_6b69_6e

    let database: Database
    let logger: Logger

    package init(database: Database, logger: Logger) {
        self.database = database
        self.logger = logger
    }

    /// Applies those of `migrations` the database lacks, in version order (a test gives it
    /// `Migration.all` and one more, as the next release would). Returns the versions it applied.
    @discardableResult
    package func migrate(_ migrations: [Migration] = Migration.all) async throws -> [Int] {
        try await database.client.withConnection { connection in
            try await connection.perform("SELECT pg_advisory_lock(\(Self.advisoryLockKey))", logger: logger)
            do {
                let applied = try await apply(migrations, on: connection)
                try await connection.perform("SELECT pg_advisory_unlock(\(Self.advisoryLockKey))", logger: logger)
                return applied
            } catch {
                try? await connection.perform("SELECT pg_advisory_unlock(\(Self.advisoryLockKey))", logger: logger)
                throw error
            }
        }
    }

    private func apply(_ migrations: [Migration], on connection: PostgresConnection) async throws -> [Int] {
        try await connection.perform(
            """
            CREATE TABLE IF NOT EXISTS schema_migrations (
                version integer PRIMARY KEY,
                name text NOT NULL,
                applied_at timestamptz NOT NULL DEFAULT now()
            )
            """, logger: logger)
        var existing: Set<Int> = []
        for try await version in try await connection.query("SELECT version FROM schema_migrations", logger: logger)
            .decode(Int.self)
        {
            existing.insert(version)
        }
        // A newer release of the same major migrated first, as a rolling upgrade does; the
        // compatibility policy keeps its schema usable by this one, so this one starts.
        let unknown = existing.subtracting(migrations.map(\.version)).sorted()
        if !unknown.isEmpty {
            logger.notice(
                "the database has migrations this release does not know; running against the newer schema",
                metadata: [
                    "unknownVersions": "\(unknown)", "newestKnownVersion": "\(migrations.map(\.version).max() ?? 0)",
                ])
        }
        var applied: [Int] = []
        for migration in migrations.sorted(by: { $0.version < $1.version }) where !existing.contains(migration.version) {
            try await connection.withTransaction(logger: logger) { connection in
                for statement in migration.statements {
                    try await connection.perform(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                try await connection.perform(
                    "INSERT INTO schema_migrations (version, name) VALUES (\(migration.version), \(migration.name))",
                    logger: logger)
            }
            logger.info("applied migration", metadata: ["version": "\(migration.version)", "name": "\(migration.name)"])
            applied.append(migration.version)
        }
        return applied
    }
}
