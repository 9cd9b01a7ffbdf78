import Crypto
import Foundation
import Logging
import PostgresNIO

/// Tenants and their API keys. Keys are shown once at creation and stored only as
/// SHA-256 hashes, so a database leak does not leak working keys.
public struct ProjectStore: Sendable {
    public enum KeyKind: String, Sendable {
        /// Sends fixes for the project's devices.
        case device
        /// Changes the project's zones and webhook endpoints.
        case management
    }

    let database: Database
    let logger: Logger

    public init(database: Database, logger: Logger) {
        self.database = database
        self.logger = logger
    }

    public func createProject(id: String, name: String) async throws {
        try await database.client.query(
            """
            INSERT INTO projects (id, name) VALUES (\(id), \(name))
            ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name
            """, logger: logger)
    }

    public func projectExists(_ id: String) async throws -> Bool {
        let rows = try await database.client.query("SELECT 1 FROM projects WHERE id = \(id)", logger: logger)
        for try await _ in rows { return true }
        return false
    }

    /// Returns the new key; only its hash is kept.
    public func createKey(projectId: String, kind: KeyKind) async throws -> String {
        let key = "ck_\(kind.rawValue)_" + Self.randomToken()
        try await addKey(key, projectId: projectId, kind: kind)
        return key
    }

    /// Registers a key chosen by the caller (used to provision known keys in local set-ups).
    public func addKey(_ key: String, projectId: String, kind: KeyKind) async throws {
        try await database.client.query(
            """
            INSERT INTO api_keys (key_hash, project_id, kind) VALUES (\(Self.hash(key)), \(projectId), \(kind.rawValue))
            ON CONFLICT (key_hash) DO NOTHING
            """, logger: logger)
    }

    /// The project a key belongs to, when it is a key of that kind.
    public func project(forKey key: String, kind: KeyKind) async throws -> String? {
        let rows = try await database.client.query(
            "SELECT project_id FROM api_keys WHERE key_hash = \(Self.hash(key)) AND kind = \(kind.rawValue)",
            logger: logger)
        for try await projectId in rows.decode(String.self) { return projectId }
        return nil
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
