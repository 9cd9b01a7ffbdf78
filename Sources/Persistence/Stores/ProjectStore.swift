import Crypto
import Foundation
import Logging
import PostgresNIO

/// Tenants and their API keys. Keys are shown once at creation and stored only as
/// SHA-256 hashes, so a database leak does not leak working keys.
package struct ProjectStore: Sendable {
    package enum KeyKind: String, Sendable, Codable, CaseIterable {
        /// Sends fixes for the project's devices.
        case device
        /// Changes the project's zones and webhook endpoints.
        case management
    }

    let database: Database
    let logger: Logger

    package init(database: Database, logger: Logger) {
        self.database = database
        self.logger = logger
    }

    package func createProject(id: String, name: String) async throws {
        try await database.client.perform(
            """
            INSERT INTO projects (id, name) VALUES (\(id), \(name))
            ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name
            """, logger: logger)
    }

    package func projectExists(_ id: String) async throws -> Bool {
        let rows = try await database.client.query("SELECT 1 FROM projects WHERE id = \(id)", logger: logger)
        for try await _ in rows { return true }
        return false
    }

    /// Registers a key chosen by the caller (used to provision known keys in local set-ups).
    package func addKey(_ key: String, projectId: String, kind: KeyKind) async throws {
        try await database.client.perform(
            """
            INSERT INTO api_keys (key_hash, id, prefix, project_id, kind)
            VALUES (\(Self.hash(key)), \(Self.newKeyId()), \(Self.prefix(of: key, kind: kind)), \(projectId), \(kind.rawValue))
            ON CONFLICT (key_hash) DO NOTHING
            """, logger: logger)
    }

    /// The project and id of a key of that kind that is neither revoked nor expired.
    package func match(forKey key: String, kind: KeyKind) async throws -> KeyMatch? {
        let rows = try await database.client.query(
            """
            SELECT project_id, id, expires_at FROM api_keys
            WHERE key_hash = \(Self.hash(key)) AND kind = \(kind.rawValue)
              AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())
            """,
            logger: logger)
        for try await (projectId, id, expiresAt) in rows.decode((String, String, Date?).self) {
            return KeyMatch(projectId: projectId, keyId: id, expiresAt: expiresAt)
        }
        return nil
    }

    /// The project a key belongs to, when it is a working key of that kind.
    package func project(forKey key: String, kind: KeyKind) async throws -> String? {
        try await match(forKey: key, kind: kind)?.projectId
    }

    static func hash(_ key: String) -> String {
        SHA256.hash(data: Data(key.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    static func randomToken() -> String {
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        return String((0..<32).map { _ in alphabet[Int(generator.next(upperBound: UInt64(alphabet.count)))] })
    }
}
