import Foundation
import Logging
import PostgresNIO

/// An event decided and committed with its device state, waiting to be published.
public struct OutboxEvent: Sendable, Equatable {
    /// Set once stored.
    public var id: Int64
    /// The fixes topic's partition the deciding fix came from (-1 when unknown).
    public var sourcePartition: Int32
    /// The event topic it goes to.
    public var topic: String
    public var deviceId: String
    public var eventId: String
    public var eventType: String
    /// The encoded event, exactly as published.
    public var event: String

    public init(
        id: Int64 = 0, sourcePartition: Int32, topic: String, deviceId: String, eventId: String, eventType: String,
        event: String
    ) {
        self.id = id
        self.sourcePartition = sourcePartition
        self.topic = topic
        self.deviceId = deviceId
        self.eventId = eventId
        self.eventType = eventType
        self.event = event
    }
}

/// The evaluator's outbox (`event_outbox`): events are added in the transaction that
/// saves the states deciding them and removed once the broker has them.
public struct EventOutboxStore: Sendable {
    let database: Database
    let logger: Logger

    public init(database: Database, logger: Logger) {
        self.database = database
        self.logger = logger
    }

    /// Adds events, in order, in the caller's transaction.
    public func add(
        _ events: [OutboxEvent], group: String, sourceTopic: String, on connection: PostgresConnection
    ) async throws {
        guard !events.isEmpty else { return }
        try await connection.query(
            """
            INSERT INTO event_outbox (consumer_group, source_topic, source_partition, topic, device_id, event_id,
                                      event_type, event)
            SELECT \(group), \(sourceTopic), e.partition, e.topic, e.device_id, e.event_id, e.event_type, e.event
            FROM UNNEST(\(events.map { Int($0.sourcePartition) })::int4[], \(events.map(\.topic))::text[],
                        \(events.map(\.deviceId))::text[], \(events.map(\.eventId))::text[],
                        \(events.map(\.eventType))::text[], \(events.map(\.event))::text[])
                 WITH ORDINALITY AS e(partition, topic, device_id, event_id, event_type, event, ordinal)
            ORDER BY e.ordinal
            """, logger: logger)
    }

    /// The oldest waiting events of these partitions (and those of no known partition), in
    /// the order they were decided.
    public func waiting(group: String, sourceTopic: String, partitions: [Int32], limit: Int) async throws
        -> [OutboxEvent]
    {
        let rows = try await database.client.query(
            """
            SELECT id, source_partition, topic, device_id, event_id, event_type, event FROM event_outbox
            WHERE consumer_group = \(group) AND source_topic = \(sourceTopic)
              AND source_partition = ANY(\((partitions + [-1]).map(Int.init))::int4[])
            ORDER BY id
            LIMIT \(limit)
            """, logger: logger)
        var events: [OutboxEvent] = []
        for try await (id, partition, topic, device, eventId, type, event) in rows.decode(
            (Int64, Int32, String, String, String, String, String).self)
        {
            events.append(
                OutboxEvent(
                    id: id, sourcePartition: partition, topic: topic, deviceId: device, eventId: eventId,
                    eventType: type, event: event))
        }
        return events
    }

    /// Removes events the broker has (or that were set aside).
    public func remove(ids: [Int64]) async throws {
        guard !ids.isEmpty else { return }
        try await database.client.query("DELETE FROM event_outbox WHERE id = ANY(\(ids)::int8[])", logger: logger)
    }
}
