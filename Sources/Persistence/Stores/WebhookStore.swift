import Foundation
import Logging
import PostgresNIO
import Shared

/// Webhook endpoints and the durable queue of deliveries to them. Endpoint
/// secrets are stored sealed by `sealer` and handed out decrypted, for signing only.
public struct WebhookStore: Sendable {
    let database: Database
    let logger: Logger
    let sealer: SecretSealer

    public init(database: Database, logger: Logger, sealer: SecretSealer) {
        self.database = database
        self.logger = logger
        self.sealer = sealer
    }
}
