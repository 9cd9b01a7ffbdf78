import Foundation
import Logging
import PostgresNIO
import Shared

/// One event to send to one endpoint.
public struct NewDelivery: Sendable {
    public var endpointId: String
    public var projectId: String
    public var eventId: String
    public var eventType: String
    public var deviceId: String
    /// When the check-in or check-out happened. Check-ins and check-outs come from
    /// different topics, so arrival order says nothing; this restores the device's order.
    public var eventTime: Date
    /// For a check-out, the event id of its check-in, which the partner must get first.
    public var checkInId: String?
    /// The exact body to send, fixed when the event is accepted so every attempt signs the same bytes.
    public var payload: String

    public init(
        endpointId: String, projectId: String, eventId: String, eventType: String, deviceId: String, eventTime: Date,
        checkInId: String? = nil, payload: String
    ) {
        self.endpointId = endpointId
        self.projectId = projectId
        self.eventId = eventId
        self.eventType = eventType
        self.deviceId = deviceId
        self.eventTime = eventTime
        self.checkInId = checkInId
        self.payload = payload
    }
}

/// A delivery claimed for an attempt, with what is needed to send it.
public struct DeliveryAttempt: Sendable {
    public var id: Int64
    public var url: String
    public var secrets: [String]
    public var eventId: String
    public var deviceId: String
    public var eventTime: Date
    public var payload: String
    /// Attempts so far, including this one.
    public var attempt: Int
}

public enum DeliveryStatus: String, Sendable, Codable, CaseIterable {
    case pending, delivered, failed
}

/// A delivery as listed to operators.
public struct DeliveryRecord: Sendable, Codable, Equatable {
    public var id: Int64
    public var endpointId: String
    public var eventId: String
    public var eventType: String
    public var deviceId: String
    public var status: DeliveryStatus
    public var attempts: Int
    public var lastStatusCode: Int?
    public var lastError: String?
    public var createdAt: Date
    public var deliveredAt: Date?
}

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

    /// Adds deliveries; an (endpoint, event) pair already queued is left as it is,
    /// which makes a redelivered event harmless. Returns how many were new.
    @discardableResult
    public func enqueue(_ deliveries: [NewDelivery]) async throws -> Int {
        guard !deliveries.isEmpty else { return 0 }
        let rows = try await database.client.query(
            """
            INSERT INTO deliveries (endpoint_id, project_id, event_id, event_type, device_id, event_time, check_in_id, payload)
            SELECT u.endpoint_id, u.project_id, u.event_id, u.event_type, u.device_id, u.event_time,
                   NULLIF(u.check_in_id, ''), u.payload
            FROM UNNEST(\(deliveries.map(\.endpointId))::text[], \(deliveries.map(\.projectId))::text[],
                        \(deliveries.map(\.eventId))::text[], \(deliveries.map(\.eventType))::text[],
                        \(deliveries.map(\.deviceId))::text[], \(deliveries.map(\.eventTime))::timestamptz[],
                        \(deliveries.map { $0.checkInId ?? "" })::text[], \(deliveries.map(\.payload))::text[])
                 AS u(endpoint_id, project_id, event_id, event_type, device_id, event_time, check_in_id, payload)
            ON CONFLICT (endpoint_id, event_id) DO NOTHING
            RETURNING id
            """, logger: logger)
        var inserted = 0
        for try await _ in rows { inserted += 1 }
        return inserted
    }

    /// Claims due deliveries for one attempt each: their next attempt is pushed out by
    /// `lease`, so a worker that dies mid-attempt leaves them to be retried, not lost.
    ///
    /// A check-out waits until its check-in's delivery to the same endpoint is done
    /// (the two come from different topics, so the check-out can be queued first),
    /// but never longer than `checkOutHold`: the check-in may never come to this
    /// endpoint, for one added after it.
    public func claimDue(limit: Int, lease: Duration, checkOutHold: Duration = .seconds(60)) async throws -> [DeliveryAttempt] {
        let holdSeconds = Double(checkOutHold.components.seconds)
        let leaseSeconds = Double(lease.components.seconds) + Double(lease.components.attoseconds) / 1e18
        let rows = try await database.client.query(
            """
            UPDATE deliveries d
               SET attempts = d.attempts + 1, next_attempt_at = now() + make_interval(secs => \(leaseSeconds))
              FROM webhook_endpoints e
             WHERE e.id = d.endpoint_id
               AND d.id IN (SELECT id FROM deliveries
                             WHERE status = 'pending' AND next_attempt_at <= now()
                               AND NOT (check_in_id IS NOT NULL
                                        AND created_at > now() - make_interval(secs => \(holdSeconds))
                                        AND NOT EXISTS (SELECT 1 FROM deliveries c
                                                         WHERE c.endpoint_id = deliveries.endpoint_id
                                                           AND c.event_id = deliveries.check_in_id
                                                           AND c.status <> 'pending'))
                             ORDER BY next_attempt_at, event_time, id
                             LIMIT \(limit)
                             FOR UPDATE SKIP LOCKED)
            RETURNING d.id, e.url,
                      ARRAY(SELECT s.sealed FROM webhook_secrets s
                             WHERE s.endpoint_id = e.id AND (s.expires_at IS NULL OR s.expires_at > now())
                             ORDER BY s.id DESC),
                      d.event_id, d.device_id, d.event_time, d.payload, d.attempts
            """, logger: logger)
        var result: [DeliveryAttempt] = []
        for try await (id, url, secrets, eventId, deviceId, eventTime, payload, attempts) in rows.decode(
            (Int64, String, [String], String, String, Date, String, Int).self)
        {
            result.append(
                DeliveryAttempt(
                    id: id, url: url, secrets: try openSecrets(secrets), eventId: eventId, deviceId: deviceId, eventTime: eventTime,
                    payload: payload, attempt: attempts))
        }
        return result.sorted { ($0.eventTime, $0.id) < ($1.eventTime, $1.id) }
    }

    public func markDelivered(id: Int64, statusCode: Int) async throws {
        try await database.client.query(
            """
            UPDATE deliveries SET status = 'delivered', delivered_at = now(), last_status_code = \(statusCode),
                   last_error = NULL
            WHERE id = \(id)
            """, logger: logger)
    }

    /// Records a failed attempt: retried at `retryAt`, or given up on when nil.
    public func markAttemptFailed(id: Int64, statusCode: Int?, error: String, retryAt: Date?) async throws {
        let status = retryAt == nil ? DeliveryStatus.failed : .pending
        try await database.client.query(
            """
            UPDATE deliveries SET status = \(status.rawValue), last_status_code = \(statusCode), last_error = \(error),
                   next_attempt_at = COALESCE(\(retryAt), next_attempt_at)
            WHERE id = \(id)
            """, logger: logger)
    }

    public func deliveries(projectId: String, status: DeliveryStatus?, limit: Int) async throws -> [DeliveryRecord] {
        let statusFilter = status?.rawValue ?? ""
        let rows = try await database.client.query(
            """
            SELECT id, endpoint_id, event_id, event_type, device_id, status, attempts, last_status_code, last_error,
                   created_at, delivered_at
            FROM deliveries
            WHERE project_id = \(projectId) AND (\(statusFilter) = '' OR status = \(statusFilter))
            ORDER BY id DESC LIMIT \(limit)
            """, logger: logger)
        var result: [DeliveryRecord] = []
        for try await row in rows {
            let (id, endpointId, eventId, eventType, deviceId, status, attempts, code, error, createdAt, deliveredAt) =
                try row.decode((Int64, String, String, String, String, String, Int, Int?, String?, Date, Date?).self)
            result.append(
                DeliveryRecord(
                    id: id, endpointId: endpointId, eventId: eventId, eventType: eventType, deviceId: deviceId,
                    status: DeliveryStatus(rawValue: status) ?? .pending, attempts: attempts, lastStatusCode: code,
                    lastError: error, createdAt: createdAt, deliveredAt: deliveredAt))
        }
        return result
    }

    /// Queues a delivery again (after a partner fixed its endpoint). Returns false if there is no such delivery.
    public func replay(deliveryId: Int64, projectId: String) async throws -> Bool {
        let rows = try await database.client.query(
            """
            UPDATE deliveries SET status = 'pending', attempts = 0, next_attempt_at = now(), delivered_at = NULL
            WHERE id = \(deliveryId) AND project_id = \(projectId)
            RETURNING id
            """, logger: logger)
        for try await _ in rows { return true }
        return false
    }
}
