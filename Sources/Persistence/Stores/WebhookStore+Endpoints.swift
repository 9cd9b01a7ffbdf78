import Foundation
import Logging
import PostgresNIO
import Shared

/// A partner URL that receives a project's events, as listed to operators: its
/// state, never its secrets (they are shown once, when created or rotated).
package struct WebhookEndpoint: Sendable, Equatable, Codable {
    package var id: String
    package var projectId: String
    package var url: String
    package var enabled: Bool
    /// Why and when it was disabled (by an operator, or by a partner answering 410).
    package var disabledReason: String?
    package var disabledAt: Date?
    package var createdAt: Date
    /// While a rotation is under way, when the previous secret stops signing.
    package var previousSecretExpiresAt: Date?
}

/// The answer to a rotation: the new secret, shown this once.
package struct SecretRotation: Sendable, Equatable {
    package var endpoint: WebhookEndpoint
    package var secret: String
}

extension WebhookStore {
    /// Adds an endpoint; `secrets` are stored sealed, the first one current.
    package func addEndpoint(projectId: String, url: String, secrets: [String]) async throws -> WebhookEndpoint {
        let id = "we_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(20)
        let sealed = secrets.map(sealer.seal)
        return try await database.withTransaction { connection in
            let rows = try await connection.query(
                """
                INSERT INTO webhook_endpoints (id, project_id, url) VALUES (\(String(id)), \(projectId), \(url))
                RETURNING created_at
                """, logger: logger)
            var createdAt = Date()
            for try await value in rows.decode(Date.self) { createdAt = value }
            try await connection.perform(
                "INSERT INTO webhook_secrets (endpoint_id, sealed) SELECT \(String(id)), unnest(\(sealed)::text[])", logger: logger)
            return WebhookEndpoint(id: String(id), projectId: projectId, url: url, enabled: true, createdAt: createdAt)
        }
    }

    /// Deletes the endpoint (its deliveries go with it); false when the project has no such endpoint.
    @discardableResult
    package func removeEndpoint(id: String, projectId: String) async throws -> Bool {
        try await database.withTransaction { connection in
            // Its deliveries are locked first, in id order, as queueing, recording and lease
            // renewal lock them. Deleted by the cascade alone, they would be taken in storage
            // order while the endpoint is held, which queueing takes after its deliveries (a
            // deadlock, which fails one of the two).
            let locked = try await connection.query(
                """
                SELECT d.event_id FROM deliveries d
                 WHERE d.endpoint_id = \(id)
                   AND EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.id = \(id) AND e.project_id = \(projectId))
                 ORDER BY d.id FOR UPDATE OF d
                """, logger: logger)
            var bodies: Set<EventPayload.Key> = []
            for try await eventId in locked.decode(String.self) {
                bodies.insert(EventPayload.Key(projectId: projectId, eventId: eventId))
            }
            let rows = try await connection.query(
                "DELETE FROM webhook_endpoints WHERE id = \(id) AND project_id = \(projectId) RETURNING 1", logger: logger)
            var removed = false
            for try await _ in rows { removed = true }
            // The bodies of events that were queued for this endpoint alone go with its deliveries.
            try await EventPayloadStore.deleteUnneeded(bodies, on: connection, logger: logger)
            return removed
        }
    }

    package func endpoints(projectId: String) async throws -> [WebhookEndpoint] {
        try await listEndpoints(projectId: projectId, id: nil)
    }

    /// The ids of every endpoint (enabled or not) of these projects, by project: what an
    /// event is queued for.
    package func endpointIds(projectIds: Set<String>) async throws -> [String: [String]] {
        guard !projectIds.isEmpty else { return [:] }
        let rows = try await database.client.query(
            """
            SELECT project_id, id FROM webhook_endpoints WHERE project_id = ANY(\(Array(projectIds))::text[])
            ORDER BY project_id, created_at, id
            """, logger: logger)
        var result: [String: [String]] = [:]
        for try await (project, id) in rows.decode((String, String).self) { result[project, default: []].append(id) }
        return result
    }

    package func endpoint(id: String, projectId: String) async throws -> WebhookEndpoint? {
        try await listEndpoints(projectId: projectId, id: id).first
    }

    /// Stops deliveries to an endpoint (its events keep queueing); keeps the first reason
    /// when it is already disabled. `projectId` nil: whatever the project (the notifier,
    /// on a partner's 410). Returns the endpoint, or nil if there is none.
    @discardableResult
    package func disableEndpoint(id: String, projectId: String? = nil, reason: String) async throws -> WebhookEndpoint? {
        let rows = try await database.client.query(
            """
            WITH disabled AS (
                UPDATE webhook_endpoints
                   SET disabled_reason = CASE WHEN enabled THEN \(reason) ELSE disabled_reason END,
                       disabled_at = CASE WHEN enabled THEN now() ELSE disabled_at END,
                       enabled = false
                 WHERE id = \(id) AND (\(projectId ?? "") = '' OR project_id = \(projectId ?? ""))
                RETURNING id, project_id
            ), parked AS (
                -- Not due while the endpoint is disabled, so that claims never read them.
                UPDATE deliveries d SET next_attempt_at = 'infinity'
                  FROM disabled WHERE d.endpoint_id = disabled.id AND d.status = 'pending'
                RETURNING d.id
            )
            SELECT project_id FROM disabled
            """, logger: logger)
        for try await project in rows.decode(String.self) { return try await endpoint(id: id, projectId: project) }
        return nil
    }

    /// Lets deliveries go to an endpoint again. Returns the endpoint, or nil if there is none.
    /// Its waiting deliveries are let go only once the endpoint is found to be the project's:
    /// another project's endpoint id must not make Postgres go through that project's backlog.
    @discardableResult
    package func enableEndpoint(id: String, projectId: String) async throws -> WebhookEndpoint? {
        let rows = try await database.client.query(
            """
            UPDATE webhook_endpoints SET enabled = true, disabled_reason = NULL, disabled_at = NULL
             WHERE id = \(id) AND project_id = \(projectId)
            RETURNING 1
            """, logger: logger)
        var found = false
        for try await _ in rows { found = true }
        guard found else { return nil }
        try await releaseWaitingHeads(endpointId: id)
        return try await endpoint(id: id, projectId: projectId)
    }

    /// Adds `newSecret` as the endpoint's current secret. The secret that was current keeps
    /// signing for `window`, while the partner switches over; a secret still in the window
    /// of an earlier rotation keeps its own end, and expired ones are dropped.
    package func rotateSecret(id: String, projectId: String, newSecret: String, window: Duration) async throws -> SecretRotation? {
        let sealed = sealer.seal(newSecret)
        let found = try await database.withTransaction { connection in
            let rows = try await connection.query(
                "SELECT id FROM webhook_endpoints WHERE id = \(id) AND project_id = \(projectId) FOR UPDATE", logger: logger)
            var found = false
            for try await _ in rows { found = true }
            guard found else { return false }
            try await connection.perform(
                "DELETE FROM webhook_secrets WHERE endpoint_id = \(id) AND expires_at <= now()", logger: logger)
            try await connection.perform(
                """
                UPDATE webhook_secrets SET expires_at = now() + make_interval(secs => \(window.seconds))
                 WHERE endpoint_id = \(id) AND expires_at IS NULL
                """, logger: logger)
            try await connection.perform(
                "INSERT INTO webhook_secrets (endpoint_id, sealed) VALUES (\(id), \(sealed))", logger: logger)
            return true
        }
        guard found, let endpoint = try await endpoint(id: id, projectId: projectId) else { return nil }
        return SecretRotation(endpoint: endpoint, secret: newSecret)
    }

    /// Run at every service start: seals secrets stored in plaintext (before encryption
    /// at rest), drops those whose rotation window is over, and fails with a clear error
    /// when a secret was sealed with another key than the configured one, rather than
    /// leaving the notifier unable to sign. Returns how many it sealed.
    @discardableResult
    package func sealStoredSecrets() async throws -> Int {
        try await database.withTransaction { connection in
            try await connection.perform("DELETE FROM webhook_secrets WHERE expires_at <= now()", logger: logger)
            let rows = try await connection.query("SELECT id, sealed FROM webhook_secrets FOR UPDATE", logger: logger)
            var plaintext: [(Int64, String)] = []
            for try await (id, stored) in rows.decode((Int64, String).self) {
                if SecretSealer.isPlaintext(stored) {
                    plaintext.append((id, stored))
                } else {
                    _ = try sealer.open(stored)
                }
            }
            guard !plaintext.isEmpty else { return 0 }
            try await connection.perform(
                """
                UPDATE webhook_secrets s SET sealed = u.sealed
                  FROM UNNEST(\(plaintext.map(\.0))::bigint[], \(plaintext.map { sealer.seal($0.1) })::text[]) AS u(id, sealed)
                 WHERE s.id = u.id
                """, logger: logger)
            logger.info("sealed webhook secrets stored in plaintext", metadata: ["count": "\(plaintext.count)"])
            return plaintext.count
        }
    }

    private func listEndpoints(projectId: String, id: String?) async throws -> [WebhookEndpoint] {
        let rows = try await database.client.query(
            """
            SELECT e.id, e.project_id, e.url, e.enabled, e.disabled_reason, e.disabled_at, e.created_at,
                   (SELECT max(s.expires_at) FROM webhook_secrets s WHERE s.endpoint_id = e.id AND s.expires_at > now())
              FROM webhook_endpoints e
             WHERE e.project_id = \(projectId) AND (\(id ?? "") = '' OR e.id = \(id ?? ""))
             ORDER BY e.created_at, e.id
            """, logger: logger)
        var result: [WebhookEndpoint] = []
        for try await (id, project, url, enabled, reason, disabledAt, createdAt, expiresAt) in rows.decode(
            (String, String, String, Bool, String?, Date?, Date, Date?).self)
        {
            result.append(
                WebhookEndpoint(
                    id: id, projectId: project, url: url, enabled: enabled, disabledReason: reason, disabledAt: disabledAt,
                    createdAt: createdAt, previousSecretExpiresAt: expiresAt))
        }
        return result
    }
}
