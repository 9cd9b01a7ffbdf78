import Foundation
import Logging
import PostgresNIO
import Shared

/// Which events of a project to list (every filter optional).
package struct EventFilter: Sendable {
    package var deviceId: String?
    package var zoneId: String?
    package var type: EventType?
    /// The check-in or check-out happened at or after `from`, and before `until`.
    package var from: Date?
    package var until: Date?

    package init(deviceId: String? = nil, zoneId: String? = nil, type: EventType? = nil, from: Date? = nil, until: Date? = nil) {
        self.deviceId = deviceId
        self.zoneId = zoneId
        self.type = type
        self.from = from
        self.until = until
    }
}

/// Where one event stands with one endpoint.
package struct EventDeliveryState: Sendable, Codable, Equatable {
    package var endpointId: String
    /// Written as its identifier, `dlv_42`.
    @DeliveryIdentifierCoded package var deliveryId: Int64
    package var status: String
    package var attempts: Int
    package var lastStatusCode: Int?
    package var lastError: String?
    package var deliveredAt: Date?
}

/// An event of the log with the state of its deliveries.
package struct LoggedEvent: Sendable, Codable, Equatable {
    package var event: CheckEvent
    package var decidedAt: Date
    package var deliveries: [EventDeliveryState]
}

package struct EventPage: Sendable {
    package var events: [LoggedEvent]
    package var nextCursor: Int64?
}

/// The event log (docs/evaluation-rules.md#reading-decision-records): events as decided, newest first, each with its
/// deliveries per endpoint. Written by `EventOutboxStore.add`; purged past a retention.
package struct EventLogStore: Sendable {
    let database: Database
    let logger: Logger

    package init(database: Database, logger: Logger) {
        self.database = database
        self.logger = logger
    }

    package func page(projectId: String, filter: EventFilter, before cursor: Int64?, limit: Int) async throws -> EventPage {
        let rows = try await database.client.query(
            """
            SELECT id, event, decided_at FROM event_log
             WHERE project_id = \(projectId) AND id < \(cursor ?? Int64.max)
               AND (\(filter.deviceId ?? "") = '' OR device_id = \(filter.deviceId ?? ""))
               AND (\(filter.zoneId ?? "") = '' OR zone_id = \(filter.zoneId ?? ""))
               AND (\(filter.type?.rawValue ?? "") = '' OR event_type = \(filter.type?.rawValue ?? ""))
               AND event_time >= \(filter.from ?? Date(timeIntervalSince1970: 0))
               AND event_time < \(filter.until ?? Date.distantFuture)
             ORDER BY id DESC
             LIMIT \(limit + 1)
            """, logger: logger)
        var events: [LoggedEvent] = []
        var lastId: Int64?
        var more = false
        let decoder = WireJSON.decoder()
        for try await (id, json, decidedAt) in rows.decode((Int64, String, Date).self) {
            if events.count == limit {
                more = true
                break
            }
            events.append(
                LoggedEvent(
                    event: try decoder.decode(CheckEvent.self, from: Data(json.utf8)), decidedAt: decidedAt, deliveries: []))
            lastId = id
        }
        let states = try await deliveries(projectId: projectId, eventIds: events.map(\.event.eventId))
        for index in events.indices { events[index].deliveries = states[events[index].event.eventId] ?? [] }
        return EventPage(events: events, nextCursor: more ? lastId : nil)
    }

    /// The deliveries of these events, by event, found through the project's endpoints
    /// (each endpoint's (endpoint, event) index), oldest endpoint first.
    func deliveries(projectId: String, eventIds: [String]) async throws -> [String: [EventDeliveryState]] {
        guard !eventIds.isEmpty else { return [:] }
        let rows = try await database.client.query(
            """
            SELECT d.event_id, d.endpoint_id, d.id, d.status, d.attempts, d.last_status_code, d.last_error, d.delivered_at
              FROM webhook_endpoints w
              JOIN deliveries d ON d.endpoint_id = w.id AND d.event_id = ANY(\(eventIds)::text[])
             WHERE w.project_id = \(projectId)
             ORDER BY w.created_at, w.id
            """, logger: logger)
        var found: [String: [EventDeliveryState]] = [:]
        for try await (eventId, endpointId, id, status, attempts, code, error, deliveredAt) in rows.decode(
            (String, String, Int64, String, Int, Int?, String?, Date?).self)
        {
            found[eventId, default: []].append(
                EventDeliveryState(
                    endpointId: endpointId, deliveryId: id, status: status, attempts: attempts, lastStatusCode: code,
                    lastError: error, deliveredAt: deliveredAt))
        }
        return found
    }

    /// Deletes events decided before `now - retention`, `batchSize` per statement.
    package func purge(olderThan retention: Duration, now: Date, batchSize: Int = 5000) async throws -> Int {
        let cutoff = now.addingTimeInterval(-retention.seconds)
        var purged = 0
        while true {
            let rows = try await database.client.query(
                """
                WITH doomed AS (
                    SELECT project_id, id FROM event_log WHERE decided_at < \(cutoff) LIMIT \(batchSize)
                )
                DELETE FROM event_log e USING doomed WHERE e.project_id = doomed.project_id AND e.id = doomed.id
                RETURNING 1
                """, logger: logger)
            var deleted = 0
            for try await _ in rows { deleted += 1 }
            purged += deleted
            if deleted < batchSize { return purged }
            try await Task.sleep(for: .milliseconds(50))
        }
    }
}
