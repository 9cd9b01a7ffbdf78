import Foundation
import Logging
import PostgresNIO
import Shared

/// Where the key that seals webhook secrets comes from when `CHECKIN_SECRET_KEY` is unset.
package enum SecretKeyFallback: Sendable {
    /// Production services (`ingest`, `evaluator`, `notifier`): none; the key is required.
    case required
    /// `checkin dev` and `checkin demo`: a key generated once and kept in the local
    /// database (table `local_secret_key`), so that a restart still decrypts.
    case generateLocal
    /// Management commands: the local key, if `dev` or `demo` made one.
    case existingLocal
}

package struct SecretKeyMissingError: Error, CustomStringConvertible {
    package init() {}
    package var description: String {
        "\(SecretEncryptionKey.variable) is not set: webhook secrets are encrypted with it. "
            + "Set it to the base64 of 32 random bytes (openssl rand -base64 32) and keep it: "
            + "the stored secrets cannot be read without it. (checkin dev and demo make a local one.)"
    }
}

/// Finds the key that seals webhook secrets: the configured one, or the local one.
package struct SecretKeyStore: Sendable {
    let database: Database
    let logger: Logger

    package init(database: Database, logger: Logger) {
        self.database = database
        self.logger = logger
    }

    package func sealer(configured: SecretEncryptionKey?, fallback: SecretKeyFallback) async throws -> SecretSealer {
        if let configured { return SecretSealer(key: configured) }
        switch fallback {
        case .required:
            throw SecretKeyMissingError()
        case .generateLocal:
            let generated = SecretEncryptionKey.generate().base64
            try await database.client.perform(
                "INSERT INTO local_secret_key (key) VALUES (\(generated)) ON CONFLICT DO NOTHING", logger: logger)
            guard let stored = try await localKey() else { throw SecretKeyMissingError() }
            return SecretSealer(key: stored)
        case .existingLocal:
            guard let stored = try await localKey() else { throw SecretKeyMissingError() }
            return SecretSealer(key: stored)
        }
    }

    private func localKey() async throws -> SecretEncryptionKey? {
        let rows = try await database.client.query("SELECT key FROM local_secret_key", logger: logger)
        for try await text in rows.decode(String.self) { return try SecretEncryptionKey(base64: text) }
        return nil
    }
}
