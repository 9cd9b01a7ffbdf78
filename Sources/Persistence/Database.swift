import Foundation
import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import ServiceLifecycle

/// The one Postgres connection pool of a process, run as a `Service`.
package final class Database: Service, Sendable {
    package let client: PostgresClient
    package let logger: Logger

    package let configuration: DatabaseConfiguration

    package init(configuration: DatabaseConfiguration, logger: Logger) {
        self.configuration = configuration
        // The pool's own chatter (including a harmless warning when a service queries in
        // the instant before `run()` started) is for debugging, not for operators.
        var poolLogger = logger
        poolLogger.logLevel = max(logger.logLevel, .error)
        self.client = PostgresClient(configuration: configuration.clientConfiguration, backgroundLogger: poolLogger)
        self.logger = logger
    }

    package func run() async throws {
        // The pool runs until cancelled; a graceful shutdown is turned into that cancellation.
        await cancelWhenGracefulShutdown { await self.client.run() }
    }

    /// Runs `body` in a transaction, retrying it when Postgres reports a
    /// serialization failure or a deadlock, which are expected under concurrency.
    /// `settings` (such as `work_mem = '32MB'`) hold for this transaction alone (SET LOCAL).
    package func withTransaction<Result: Sendable>(
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

    /// Waits until the database answers, so services and commands fail with a clear message
    /// (the address, never the password, and why) instead of a pool's time-out when it is not
    /// there. Each try is a connection of its own, given up at the deadline: the pool keeps
    /// trying for a minute before it says anything.
    package func waitUntilReachable(timeout: Duration) async throws {
        let deadline = ContinuousClock.now + timeout
        while true {
            let left = deadline - ContinuousClock.now
            do {
                let connection = try await PostgresConnection.connect(
                    configuration: try configuration.probeConfiguration(connectTimeout: max(left, .milliseconds(500))), id: 0,
                    logger: Logger(label: "checkin.database.probe", factory: { _ in SwiftLogNoOpLogHandler() }))
                defer { Task { try? await connection.close() } }
                try await connection.query("SELECT 1", logger: logger).collect()
                return
            } catch {
                let cause = DatabaseUnreachableError.cause(of: error)
                // What waiting cannot mend is said at once.
                if ContinuousClock.now >= deadline || cause.isFinal {
                    throw DatabaseUnreachableError(address: configuration.address, cause: cause)
                }
                try await Task.sleep(for: .milliseconds(250))
            }
        }
    }
}

/// Postgres did not answer: where it was looked for and why, in words an operator acts on.
package struct DatabaseUnreachableError: Error, CustomStringConvertible {
    package enum Cause: Sendable, Equatable {
        case refused
        case timedOut
        case authentication(String)
        case noSuchDatabase(String)
        case tls(String)
        case other(String)

        /// Neither a wrong password nor a missing database comes right by waiting.
        var isFinal: Bool {
            switch self {
            case .authentication, .noSuchDatabase, .tls: true
            case .refused, .timedOut, .other: false
            }
        }

        var text: String {
            switch self {
            case .refused: "the connection was refused (nothing listens there)"
            case .timedOut: "no answer in time (a wrong host, or a network that drops the connection)"
            case .authentication(let message): "authentication failed: \(message)"
            case .noSuchDatabase(let message): "no such database: \(message)"
            case .tls(let message): "TLS failed: \(message)"
            case .other(let message): message
            }
        }
    }

    package var address: String
    package var cause: Cause
    package var description: String {
        "Postgres at \(address) is not reachable (check CHECKIN_DATABASE_URL): \(cause.text)"
    }

    static func cause(of error: any Error) -> Cause {
        if let error = error as? PSQLError {
            if error.code == .server, let state = error.serverInfo?[.sqlState] {
                let message = error.serverInfo?[.message] ?? state
                if state == "28P01" || state == "28000" { return .authentication(message) }
                if state == "3D000" { return .noSuchDatabase(message) }
                return .other("Postgres answered \(state): \(message)")
            }
            if error.code == .sslUnsupported || error.code == .failedToAddSSLHandler {
                return .tls(error.code == .sslUnsupported ? "the server does not offer TLS" : "\(error.code)")
            }
            if error.code == .unsupportedAuthMechanism || error.code == .authMechanismRequiresPassword || error.code == .saslError {
                return .authentication("\(error.code)")
            }
            if let underlying = error.underlying { return cause(of: underlying) }
        }
        if let error = error as? ChannelError, case .connectTimeout = error { return .timedOut }
        if let error = error as? IOError, error.errnoCode == ECONNREFUSED { return .refused }
        if let error = error as? NIOConnectionError {
            if error.connectionErrors.contains(where: { ($0.error as? IOError)?.errnoCode == ECONNREFUSED }) { return .refused }
            if error.connectionErrors.isEmpty, error.dnsAAAAError != nil || error.dnsAError != nil {
                return .other("the host name does not resolve")
            }
            return .timedOut
        }
        return .other("\(error)")
    }
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
    package static func withTemporaryClient<Result: Sendable>(
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
    package func perform(_ statement: PostgresQuery, logger: Logger, file: String = #fileID, line: Int = #line)
        async throws
    {
        for try await _ in try await query(statement, logger: logger, file: file, line: line) {}
    }
}

extension PostgresClient {
    /// Runs a statement on a pooled connection, reading its rows to the end so that a failure
    /// met while it runs is thrown (see `PostgresConnection.perform`).
    package func perform(_ statement: PostgresQuery, logger: Logger, file: String = #fileID, line: Int = #line)
        async throws
    {
        for try await _ in try await query(statement, logger: logger, file: file, line: line) {}
    }
}
