import Foundation
import Logging
import PostgresNIO
import Shared

/// Webhook endpoints and the durable queue of deliveries to them. Endpoint secrets are
/// stored sealed by `sealer`, and claimed deliveries carry them sealed: the notifier opens
/// them, for signing only.
package struct WebhookStore: Sendable {
    let database: Database
    let logger: Logger
    /// The deployment's key (`CHECKIN_SECRET_KEY`), which seals the secrets it stores.
    package let sealer: SecretSealer

    package init(database: Database, logger: Logger, sealer: SecretSealer) {
        self.database = database
        self.logger = logger
        self.sealer = sealer
    }
}

extension PostgresQuery.StringInterpolation {
    /// The ids of the project's webhook endpoints, as an array: the way to a project's
    /// deliveries by their indexes, which are by endpoint (every delivery belongs to an
    /// endpoint of its project; removing an endpoint removes its deliveries). Found by the
    /// project alone, they were read from among every project's. Used as
    /// `endpoint_id = ANY(\(endpointIdsOf: projectId))`.
    mutating func appendInterpolation(endpointIdsOf projectId: String) {
        appendLiteral("ARRAY(SELECT e.id FROM webhook_endpoints e WHERE e.project_id = ")
        appendInterpolation(projectId)
        appendLiteral(")")
    }
}
