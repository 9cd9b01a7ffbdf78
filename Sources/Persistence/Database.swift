import Logging
import PostgresNIO
import ServiceLifecycle

/// The one Postgres connection pool of a process, run as a `Service`.
public final class Database: Service, Sendable {
    public let client: PostgresClient
    public let logger: Logger

    public init(configuration: DatabaseConfiguration, logger: Logger) {
        // The pool's own chatter (including a harmless warning when a service queries in
        // the instant before `run()` started) is for debugging, not for operators.
        var poolLogger = logger
        poolLogger.logLevel = max(logger.logLevel, .error)
        self.client = PostgresClient(configuration: configuration.clientConfiguration, backgroundLogger: poolLogger)
        self.logger = logger
    }

    public func run() async throws {
        // The pool runs until cancelled; a graceful shutdown is turned into that cancellation.
        await cancelWhenGracefulShutdown { await self.client.run() }
    }

    /// Runs `body` in a transaction, retrying it when Postgres reports a
    /// serialization failure or a deadlock, which are expected under concurrency.
    /// `settings` (such as `work_mem = '32MB'`) hold for this transaction alone (SET LOCAL).
    public func withTransaction<Result: Sendable>(
        attempts: Int = 5,
        settings: [String] = [],
        _ body: (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        var attempt = 1
        while true {
            do {
                return try await client.withTransaction(logger: logger) { connection in
                    for setting in settings {
                        try await connection.perform(PostgresQuery(unsafeSQL: "SET LOCAL " + setting), logger: logger)
                    }
                    return try await body(connection)
                }
            } catch let error as PSQLError where attempt < attempts && error.isRetryable {
                logger.debug("retrying transaction", metadata: ["attempt": "\(attempt)", "sqlState": "\(error.sqlState ?? "")"])
                attempt += 1
                try await Task.sleep(for: .milliseconds(10 * attempt * attempt))
            } catch let error as PostgresTransactionError {
                if attempt < attempts, let underlying = error.closureError as? PSQLError, underlying.isRetryable {
                    attempt += 1
                    try await Task.sleep(for: .milliseconds(10 * attempt * attempt))
                    continue
                }
                throw error.closureError ?? error
            }
        }
    }

    /// Waits until the database answers, so services fail with a clear message
    /// instead of a pool timeout when it is not there.
    public func waitUntilReachable(timeout: Duration) async throws {
        let deadline = ContinuousClock.now + timeout
        while true {
            do {
                try await client.perform("SELECT 1", logger: logger)
                return
            } catch {
                if ContinuousClock.now >= deadline {
                    throw DatabaseUnreachableError(underlying: String(reflecting: error))
                }
                try await Task.sleep(for: .milliseconds(250))
            }
        }
    }
}

public struct DatabaseUnreachableError: Error, CustomStringConvertible {
    public var underlying: String
    public var description: String { "Postgres is not reachable (check CHECKIN_DATABASE_URL): \(underlying)" }
}

extension PSQLError {
    var sqlState: String? { serverInfo?[.sqlState] }

    /// 40001 serialization_failure, 40P01 deadlock_detected.
    var isRetryable: Bool { sqlState == "40001" || sqlState == "40P01" }
}

extension Database {
    /// Runs `body` with a database whose pool lives only for the call: for
    /// command-line tools and for start-up work before a process's services run.
    @discardableResult
    public static func withTemporaryClient<Result: Sendable>(
        configuration: DatabaseConfiguration, logger: Logger, _ body: @Sendable (Database) async throws -> Result
    ) async throws -> Result {
        let database = Database(configuration: configuration, logger: logger)
        return try await withThrowingTaskGroup(of: Result?.self) { group in
            group.addTask {
                await database.client.run()
                return nil
            }
            defer { group.cancelAll() }
            return try await body(database)
        }
    }
}

extension PostgresConnection {
    /// Runs a statement whose rows, if any, are not wanted, reading them to the end.
    ///
    /// A statement that returns rows (a SELECT, a RETURNING, a lock taken FOR SHARE) tells of
    /// a failure met while it runs (a deadlock, a lock time-out, a raised error) only to the
    /// reader of its rows. Unread, the failure is lost while its transaction is aborted all the
    /// same, and the next statement fails instead with 25P02, which names no cause and which
    /// no retry of deadlocks recognises.
    public func perform(_ statement: PostgresQuery, logger: Logger, file: String = #fileID, line: Int = #line)
        async throws
    {
        for try await _ in try await query(statement, logger: logger, file: file, line: line) {}
    }
}

extension PostgresClient {
    /// Runs a statement on a pooled connection, reading its rows to the end so that a failure
    /// met while it runs is thrown (see `PostgresConnection.perform`).
    public func perform(_ statement: PostgresQuery, logger: Logger, file: String = #fileID, line: Int = #line)
        async throws
    {
        for try await _ in try await query(statement, logger: logger, file: file, line: line) {}
    }
}
