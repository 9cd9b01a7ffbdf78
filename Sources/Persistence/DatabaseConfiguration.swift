import Foundation
import NIOCore
import NIOSSL
import PostgresNIO

/// Where the database is, given as the URL operators already know
/// (`postgres://user:password@host:port/database?sslmode=disable`).
package struct DatabaseConfiguration: Sendable, Equatable {
    package var host: String
    package var port: Int
    package var username: String
    package var password: String?
    package var database: String
    package var requireTLS: Bool
    package var maximumConnections: Int
    /// Postgres ends a session left idle inside a transaction this long (releasing its
    /// locks): a worker frozen mid-batch cannot hold device rows for ever.
    package var idleInTransactionTimeout: Duration?

    package static let defaultURL = "postgres://checkin@127.0.0.1:5433/checkin"

    package init(url: String, maximumConnections: Int = 10, idleInTransactionTimeout: Duration? = .seconds(15)) throws {
        guard let components = URLComponents(string: url),
            ["postgres", "postgresql"].contains(components.scheme ?? ""),
            let host = components.host, !host.isEmpty
        else {
            throw DatabaseConfigurationError(url: url)
        }
        self.host = host
        self.port = components.port ?? 5432
        self.username = components.user ?? "postgres"
        self.password = components.password
        let path = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        self.database = path.isEmpty ? self.username : path
        let sslMode = components.queryItems?.first { $0.name == "sslmode" }?.value ?? "disable"
        self.requireTLS = ["require", "verify-ca", "verify-full"].contains(sslMode)
        self.maximumConnections = maximumConnections
        self.idleInTransactionTimeout = idleInTransactionTimeout
    }

    /// Where the database is, as messages name it: never with the password.
    package var address: String { "\(username)@\(host):\(port)/\(database)" }

    /// One connection of its own, for probing whether the database answers, given up after `connectTimeout`.
    func probeConfiguration(connectTimeout: Duration) throws -> PostgresConnection.Configuration {
        var configuration = PostgresConnection.Configuration(
            host: host, port: port, username: username, password: password, database: database,
            tls: requireTLS ? .require(try NIOSSLContext(configuration: .clientDefault)) : .disable)
        configuration.options.connectTimeout = TimeAmount.milliseconds(
            max(1, connectTimeout.components.seconds * 1000 + connectTimeout.components.attoseconds / 1_000_000_000_000_000))
        return configuration
    }

    var clientConfiguration: PostgresClient.Configuration {
        var configuration = PostgresClient.Configuration(
            host: host, port: port, username: username, password: password, database: database,
            tls: requireTLS ? .require(.clientDefault) : .disable)
        configuration.options.maximumConnections = maximumConnections
        if let idleInTransactionTimeout {
            let milliseconds =
                idleInTransactionTimeout.components.seconds * 1000
                + idleInTransactionTimeout.components.attoseconds / 1_000_000_000_000_000
            configuration.options.additionalStartupParameters.append(
                ("idle_in_transaction_session_timeout", String(milliseconds)))
        }
        return configuration
    }
}

package struct DatabaseConfigurationError: Error, CustomStringConvertible {
    package var url: String
    package var description: String {
        "CHECKIN_DATABASE_URL '\(url)' is not a postgres://user[:password]@host[:port]/database URL"
    }
}
