import PostgresNIO
import _ConnectionPoolModule

/// Failures of the database or of the way to it, rather than of what was asked of it, told
/// apart by their types in one place, so that an upgrade of the client that renames an error
/// fails to compile here instead of turning a retry into a dead letter.
package enum DatabaseFailure {
    /// True for the connection pool's own errors (a request cancelled or timed out waiting for
    /// a connection, the pool shut down, connections that cannot be made) and for rows the
    /// client could not read: none of them is about the data a batch writes.
    package static func isTroubleOfTheDatabase(_ error: any Error) -> Bool {
        switch error {
        case is ConnectionPoolError, is PostgresDecodingError: true
        default: false
        }
    }
}
