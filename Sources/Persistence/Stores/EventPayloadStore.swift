import Logging
import PostgresNIO

/// Events' bodies as their deliveries send them, kept once for all of an event's deliveries
/// (`event_payloads`), by project and event.
enum EventPayload {
    struct Key: Hashable {
        var projectId: String
        var eventId: String
    }

    /// The body of each event of `deliveries` (an event's deliveries all carry the same).
    static func bodies(of deliveries: [NewDelivery]) -> [Key: String] {
        Dictionary(
            deliveries.map { (Key(projectId: $0.projectId, eventId: $0.eventId), $0.payload) },
            uniquingKeysWith: { first, _ in first })
    }
}

/// The bodies of events (`event_payloads`), kept once for all of an event's deliveries for
/// as long as one of them is.
enum EventPayloadStore {
    /// Deletes the bodies of these events that no delivery needs any more, inside the
    /// caller's transaction, after it deleted deliveries of them.
    ///
    /// The bodies are locked first and then looked at in a statement of their own (a fresh
    /// view): an event consumed again meanwhile locks its body as it queues new deliveries
    /// of it (`WebhookStore.enqueue`), so its body is kept if those committed first, and
    /// stored again if this did.
    static func deleteUnneeded(
        _ keys: Set<EventPayload.Key>, on connection: PostgresConnection, logger: Logger
    ) async throws {
        guard !keys.isEmpty else { return }
        // In any order: the lock below takes them in key order.
        let (projects, events) = (keys.map(\.projectId), keys.map(\.eventId))
        try await connection.perform(
            """
            SELECT b.event_id FROM event_payloads b
              JOIN UNNEST(\(projects)::text[], \(events)::text[]) AS k(project_id, event_id)
                ON b.project_id = k.project_id AND b.event_id = k.event_id
             ORDER BY b.project_id, b.event_id
               FOR UPDATE OF b
            """, logger: logger)
        // A delivery is found by its endpoint and event (the deliveries' unique key) among
        // the project's endpoints: those of a removed endpoint are gone with it.
        try await connection.perform(
            """
            DELETE FROM event_payloads b
             USING UNNEST(\(projects)::text[], \(events)::text[]) AS k(project_id, event_id)
             WHERE b.project_id = k.project_id AND b.event_id = k.event_id
               AND NOT EXISTS (SELECT 1 FROM webhook_endpoints e
                                 JOIN deliveries d ON d.endpoint_id = e.id AND d.event_id = b.event_id
                                WHERE e.project_id = b.project_id)
            """, logger: logger)
    }
}
