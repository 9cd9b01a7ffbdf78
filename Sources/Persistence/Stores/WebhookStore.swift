import Foundation
import Logging
import PostgresNIO

/// A partner URL that receives a project's events, with the secrets it verifies them by.
public struct WebhookEndpoint: Sendable, Equatable, Codable {
    public var id: String
    public var projectId: String
    public var url: String
    public var secrets: [String]
    public var enabled: Bool
}

/// Webhook endpoints and the durable queue of deliveries to them.
public struct WebhookStore: Sendable {
    let database: Database
    let logger: Logger

    public init(database: Database, logger: Logger) {
        self.database = database
        self.logger = logger
    }

    public func addEndpoint(projectId: String, url: String, secrets: [String]) async throws -> WebhookEndpoint {
        let id = "we_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(20)
        try await database.client.query(
            "INSERT INTO webhook_endpoints (id, project_id, url, secrets) VALUES (\(String(id)), \(projectId), \(url), \(secrets))",
            logger: logger)
        return WebhookEndpoint(id: String(id), projectId: projectId, url: url, secrets: secrets, enabled: true)
    }

    public func removeEndpoint(id: String, projectId: String) async throws {
        try await database.client.query(
            "DELETE FROM webhook_endpoints WHERE id = \(id) AND project_id = \(projectId)", logger: logger)
    }

    public func endpoints(projectId: String) async throws -> [WebhookEndpoint] {
        let rows = try await database.client.query(
            "SELECT id, project_id, url, secrets, enabled FROM webhook_endpoints WHERE project_id = \(projectId) ORDER BY created_at",
            logger: logger)
        var result: [WebhookEndpoint] = []
        for try await (id, project, url, secrets, enabled) in rows.decode((String, String, String, [String], Bool).self) {
            result.append(WebhookEndpoint(id: id, projectId: project, url: url, secrets: secrets, enabled: enabled))
        }
        return result
    }

    /// Stops deliveries to an endpoint that answered 410 Gone. Its deliveries stay queued
    /// and go out, in order, once it is enabled again.
    public func disableEndpoint(id: String) async throws {
        try await database.client.query("UPDATE webhook_endpoints SET enabled = false WHERE id = \(id)", logger: logger)
    }
}
