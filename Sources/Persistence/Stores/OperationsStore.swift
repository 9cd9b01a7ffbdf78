import Foundation
import Logging
import PostgresNIO

/// One webhook endpoint and the deliveries it has not received, as operators watch them.
package struct EndpointBacklog: Sendable, Codable, Equatable {
    package var projectId: String
    package var endpointId: String
    package var url: String
    package var enabled: Bool
    /// Queued and not yet attempted.
    package var pending: Int
    /// Attempted at least once, failed, and due again.
    package var retrying: Int
    /// Out of attempts; waiting for a replay.
    package var failed: Int
    /// When the oldest delivery still pending or retrying was queued.
    package var oldestUndeliveredAt: Date?

    package init(
        projectId: String, endpointId: String, url: String, enabled: Bool, pending: Int, retrying: Int, failed: Int,
        oldestUndeliveredAt: Date?
    ) {
        self.projectId = projectId
        self.endpointId = endpointId
        self.url = url
        self.enabled = enabled
        self.pending = pending
        self.retrying = retrying
        self.failed = failed
        self.oldestUndeliveredAt = oldestUndeliveredAt
    }
}

/// Read-only queries for metrics and `checkin status`: what is waiting where.
package struct OperationsStore: Sendable {
    let database: Database
    let logger: Logger

    package init(database: Database, logger: Logger) {
        self.database = database
        self.logger = logger
    }

    /// Every endpoint, with its undelivered deliveries by state (an endpoint with none
    /// is listed with zeros). Reads only undelivered rows: the pending ones through
    /// `deliveries_pending_heads`, the failed ones through `deliveries_failed`.
    package func deliveryBacklog() async throws -> [EndpointBacklog] {
        let rows = try await database.client.query(Self.backlogStatement, logger: logger)
        var result: [EndpointBacklog] = []
        for try await (project, endpoint, url, enabled, pending, retrying, failed, oldest) in rows.decode(
            (String, String, String, Bool, Int64, Int64, Int64, Date?).self)
        {
            result.append(
                EndpointBacklog(
                    projectId: project, endpointId: endpoint, url: url, enabled: enabled, pending: Int(pending),
                    retrying: Int(retrying), failed: Int(failed), oldestUndeliveredAt: oldest))
        }
        return result
    }

    /// The statement of `deliveryBacklog`, on its own so that its plan can be checked.
    static let backlogStatement: PostgresQuery = """
        SELECT e.project_id, e.id, e.url, e.enabled,
               COALESCE(p.pending, 0), COALESCE(p.retrying, 0), COALESCE(f.failed, 0), p.oldest
          FROM webhook_endpoints e
          LEFT JOIN (
              SELECT endpoint_id, count(*) FILTER (WHERE attempts = 0) AS pending,
                     count(*) FILTER (WHERE attempts > 0) AS retrying, min(created_at) AS oldest
                FROM deliveries WHERE status = 'pending'
               GROUP BY endpoint_id
          ) p ON p.endpoint_id = e.id
          LEFT JOIN (
              SELECT endpoint_id, count(*) AS failed FROM deliveries WHERE status = 'failed' GROUP BY endpoint_id
          ) f ON f.endpoint_id = e.id
         ORDER BY e.project_id, e.id
        """
}
