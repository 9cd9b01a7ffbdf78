import Foundation
import PostgresNIO

/// A key that authenticated: its project, its id (to record its use and to forget it when
/// it is revoked) and when it stops working, if it does.
package struct KeyMatch: Sendable, Equatable {
    package var projectId: String
    package var keyId: String
    package var expiresAt: Date?
}

/// An API key as it is listed: never the key, only its first characters.
package struct APIKeyRecord: Sendable, Codable, Equatable {
    package var id: String
    /// Nil for keys made before prefixes were kept.
    package var prefix: String?
    package var kind: ProjectStore.KeyKind
    /// What its holders call it; nil when it was made without a name.
    package var name: String?
    package var createdAt: Date
    package var lastUsedAt: Date?
    package var expiresAt: Date?
    package var revokedAt: Date?

    static let columns = "id, prefix, kind, name, created_at, last_used_at, expires_at, revoked_at"

    init(row: PostgresRow) throws {
        let (id, prefix, kind, name, createdAt, lastUsedAt, expiresAt, revokedAt) =
            try row.decode((String, String?, String, String?, Date, Date?, Date?, Date?).self)
        self.id = id
        self.prefix = prefix
        self.name = name
        self.kind = ProjectStore.KeyKind(rawValue: kind) ?? .device
        self.createdAt = createdAt
        self.lastUsedAt = lastUsedAt
        self.expiresAt = expiresAt
        self.revokedAt = revokedAt
    }
}

/// A key just made: the only moment the key itself is known.
package struct IssuedKey: Sendable {
    package var record: APIKeyRecord
    package var key: String
}

package struct ProjectRecord: Sendable, Codable, Equatable {
    package var id: String
    package var name: String
    package var createdAt: Date
}

/// A project just created, with its first keys.
package struct NewProject: Sendable {
    package var project: ProjectRecord
    package var managementKey: IssuedKey
    package var deviceKey: IssuedKey
}

/// Projects in id order; `nextCursor` is the last id of the page when there are more.
package struct ProjectPage: Sendable {
    package var projects: [ProjectRecord]
    package var nextCursor: String?
}

package enum KeyRevocation: Sendable, Equatable {
    /// Revoked now, or already before (revoking again changes nothing).
    case revoked(APIKeyRecord)
    case notFound
    /// Refused: without it the project would have no management key without an expiry left,
    /// and none at all to manage itself with once its rotated ones expire.
    case lastManagementKey
}

package enum KeyRotation: Sendable {
    /// The new key, and the old one with the expiry it was given.
    case rotated(new: IssuedKey, old: APIKeyRecord)
    case notFound
    /// The key is revoked or expired: there is nothing to overlap with.
    case notActive
}

/// The life of a project's keys: issue, list, revoke, rotate, and coarse records of their use.
extension ProjectStore {
    /// How long a rotated key keeps working when the rotation does not say (24 h).
    package static let defaultRotationOverlapSeconds = 86_400
    /// The longest overlap a rotation may ask for (30 days).
    package static let maximumRotationOverlapSeconds = 2_592_000

    /// Creates the project with a management key and a device key, all or nothing; nil when
    /// the project exists (its keys are not touched).
    package func createProjectWithKeys(id: String, name: String) async throws -> NewProject? {
        try await database.withTransaction { connection in
            let rows = try await connection.query(
                "INSERT INTO projects (id, name) VALUES (\(id), \(name)) ON CONFLICT (id) DO NOTHING RETURNING created_at",
                logger: logger)
            var createdAt: Date?
            for try await date in rows.decode(Date.self) { createdAt = date }
            guard let createdAt else { return nil }
            return NewProject(
                project: ProjectRecord(id: id, name: name, createdAt: createdAt),
                managementKey: try await insertKey(projectId: id, kind: .management, on: connection),
                deviceKey: try await insertKey(projectId: id, kind: .device, on: connection))
        }
    }

    package func project(id: String) async throws -> ProjectRecord? {
        let rows = try await database.client.query("SELECT id, name, created_at FROM projects WHERE id = \(id)", logger: logger)
        for try await (id, name, createdAt) in rows.decode((String, String, Date).self) {
            return ProjectRecord(id: id, name: name, createdAt: createdAt)
        }
        return nil
    }

    package func projects(after cursor: String?, limit: Int) async throws -> ProjectPage {
        let rows = try await database.client.query(
            """
            SELECT id, name, created_at FROM projects WHERE id > \(cursor ?? "") ORDER BY id LIMIT \(limit + 1)
            """, logger: logger)
        var projects: [ProjectRecord] = []
        for try await (id, name, createdAt) in rows.decode((String, String, Date).self) {
            projects.append(ProjectRecord(id: id, name: name, createdAt: createdAt))
        }
        let more = projects.count > limit
        if more { projects.removeLast() }
        return ProjectPage(projects: projects, nextCursor: more ? projects.last?.id : nil)
    }

    /// Every key of the project, revoked and expired ones too, oldest first.
    package func keys(projectId: String) async throws -> [APIKeyRecord] {
        let rows = try await database.client.query(
            """
            SELECT \(unescaped: APIKeyRecord.columns) FROM api_keys
            WHERE project_id = \(projectId) ORDER BY created_at, id
            """, logger: logger)
        var keys: [APIKeyRecord] = []
        for try await row in rows { keys.append(try APIKeyRecord(row: row)) }
        return keys
    }

    /// A new key of the project, named `name` if given; only its hash is kept.
    package func issueKey(projectId: String, kind: KeyKind, name: String? = nil) async throws -> IssuedKey {
        try await database.withTransaction { connection in
            try await insertKey(projectId: projectId, kind: kind, name: name, on: connection)
        }
    }

    /// Revokes the key at once. A working management key is refused when no other management
    /// key without an expiry is left, so that a project cannot lock itself out: a rotated key
    /// in its overlap works now but stops by itself, so it does not keep the project reachable.
    package func revokeKey(id: String, projectId: String) async throws -> KeyRevocation {
        try await database.withTransaction { connection in
            // Locking the project's management keys serializes two revocations that would
            // each leave the other's key as the last one.
            let rows = try await connection.query(
                """
                SELECT id, kind, revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now()),
                       revoked_at IS NULL AND expires_at IS NULL
                FROM api_keys
                WHERE project_id = \(projectId) AND (kind = 'management' OR id = \(id)) ORDER BY id FOR UPDATE
                """, logger: logger)
            var target: (kind: String, active: Bool)?
            var otherLastingManagementKeys = 0
            for try await (keyId, kind, active, lasting) in rows.decode((String, String, Bool, Bool).self) {
                if keyId == id {
                    target = (kind, active)
                } else if kind == KeyKind.management.rawValue && lasting {
                    otherLastingManagementKeys += 1
                }
            }
            guard let target else { return .notFound }
            if target.kind == KeyKind.management.rawValue && target.active && otherLastingManagementKeys == 0 {
                return .lastManagementKey
            }
            let updated = try await connection.query(
                """
                UPDATE api_keys SET revoked_at = coalesce(revoked_at, now())
                WHERE id = \(id) AND project_id = \(projectId) RETURNING \(unescaped: APIKeyRecord.columns)
                """, logger: logger)
            for try await row in updated { return .revoked(try APIKeyRecord(row: row)) }
            return .notFound
        }
    }

    /// A new key of the same kind; the old one keeps working for `overlap` (not beyond an
    /// expiry it already had), so that clients can move to the new one without a gap.
    package func rotateKey(id: String, projectId: String, overlap: Duration) async throws -> KeyRotation {
        let overlapSeconds = Double(overlap.components.seconds)
        return try await database.withTransaction { connection in
            let rows = try await connection.query(
                """
                UPDATE api_keys
                SET expires_at = least(coalesce(expires_at, 'infinity'), now() + make_interval(secs => \(overlapSeconds)))
                WHERE id = \(id) AND project_id = \(projectId)
                  AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())
                RETURNING \(unescaped: APIKeyRecord.columns)
                """, logger: logger)
            var old: APIKeyRecord?
            for try await row in rows { old = try APIKeyRecord(row: row) }
            guard let old else {
                let exists = try await connection.query(
                    "SELECT 1 FROM api_keys WHERE id = \(id) AND project_id = \(projectId)", logger: logger)
                for try await _ in exists { return .notActive }
                return .notFound
            }
            // The new key takes the name of the one it replaces: its holders call it the same.
            let new = try await insertKey(projectId: projectId, kind: old.kind, name: old.name, on: connection)
            return .rotated(new: new, old: old)
        }
    }

    /// Records when each key was last used (key id → time); called in batches, never per
    /// request. A use is never recorded after the key's expiry: a process's clock may run ahead
    /// of the one that judged the key still valid.
    package func recordUse(_ uses: [String: Date]) async throws {
        guard !uses.isEmpty else { return }
        let keyIds = Array(uses.keys)
        let times = keyIds.map { uses[$0]! }
        try await database.client.perform(
            """
            UPDATE api_keys k SET last_used_at = LEAST(u.time, COALESCE(k.expires_at, u.time))
              FROM UNNEST(\(keyIds)::text[], \(times)::timestamptz[]) AS u(id, time)
             WHERE k.id = u.id
               AND (k.last_used_at IS NULL OR k.last_used_at < LEAST(u.time, COALESCE(k.expires_at, u.time)))
            """, logger: logger)
    }

    private func insertKey(
        projectId: String, kind: KeyKind, name: String? = nil, on connection: PostgresConnection
    ) async throws -> IssuedKey {
        let key = "ck_\(kind.rawValue)_" + Self.randomToken()
        let rows = try await connection.query(
            """
            INSERT INTO api_keys (key_hash, id, prefix, project_id, kind, name)
            VALUES (\(Self.hash(key)), \(Self.newKeyId()), \(Self.prefix(of: key, kind: kind)), \(projectId), \(kind.rawValue), \(name))
            RETURNING \(unescaped: APIKeyRecord.columns)
            """, logger: logger)
        for try await row in rows { return IssuedKey(record: try APIKeyRecord(row: row), key: key) }
        throw PostgresKeyInsertFailed()
    }

    /// `key_` and 20 random characters: readable in logs, and not the key.
    static func newKeyId() -> String {
        "key_" + randomToken().prefix(20)
    }

    /// The kind's `ck_<kind>_` and the first four characters after it: enough to tell keys
    /// apart, far too little to guess the rest.
    static func prefix(of key: String, kind: KeyKind) -> String {
        String(key.prefix("ck_\(kind.rawValue)_".count + 4))
    }
}

struct PostgresKeyInsertFailed: Error {}
