import Foundation
import Logging
import PostgresNIO

/// An event decided and committed with its device state, waiting to be published.
/// What the event log files an event under (the rest is in its JSON).
package struct EventLogKeys: Sendable, Equatable {
    package var projectId: String
    package var zoneId: String
    /// When the check-in or check-out happened.
    package var eventTime: Date
    package var sequence: Int

    package init(projectId: String, zoneId: String, eventTime: Date, sequence: Int) {
        self.projectId = projectId
        self.zoneId = zoneId
        self.eventTime = eventTime
        self.sequence = sequence
    }
}

package struct OutboxEvent: Sendable, Equatable {
    /// Set once stored.
    package var id: Int64
    /// The fixes topic's partition the deciding fix came from (-1 when unknown).
    package var sourcePartition: Int32
    /// The event topic it goes to.
    package var topic: String
    package var deviceId: String
    package var eventId: String
    package var eventType: String
    /// The encoded event, exactly as published.
    package var event: String
    /// When the fix that decided it was accepted (its record's time), if known.
    package var fixAcceptedAt: Date?
    /// When it was decided (written to the outbox); set once stored.
    package var decidedAt: Date?
    /// What the event log keeps it by; an event without a project (as in tests of the relay
    /// alone) is not logged.
    package var log: EventLogKeys?

    package init(
        id: Int64 = 0, sourcePartition: Int32, topic: String, deviceId: String, eventId: String, eventType: String,
        event: String, fixAcceptedAt: Date? = nil, decidedAt: Date? = nil, log: EventLogKeys? = nil
    ) {
        self.id = id
        self.sourcePartition = sourcePartition
        self.topic = topic
        self.deviceId = deviceId
        self.eventId = eventId
        self.eventType = eventType
        self.event = event
        self.fixAcceptedAt = fixAcceptedAt
        self.decidedAt = decidedAt
        self.log = log
    }
}

/// The evaluator's outbox (`event_outbox`): events are added in the transaction that
/// saves the states deciding them and removed once the broker has them.
package struct EventOutboxStore: Sendable {
    let database: Database
    let logger: Logger

    package init(database: Database, logger: Logger) {
        self.database = database
        self.logger = logger
    }

    /// Adds events, in order, in the caller's transaction.
    package func add(
        _ events: [OutboxEvent], group: String, sourceTopic: String, on connection: PostgresConnection
    ) async throws {
        guard !events.isEmpty else { return }
        // The log takes the events with keys; an absent key travels as "" (arrays carry no NULLs).
        let logged = events.map { $0.log ?? EventLogKeys(projectId: "", zoneId: "", eventTime: Date(), sequence: 0) }
        try await connection.perform(
            """
            WITH e AS (
                SELECT * FROM UNNEST(\(events.map { Int($0.sourcePartition) })::int4[], \(events.map(\.topic))::text[],
                            \(events.map(\.deviceId))::text[], \(events.map(\.eventId))::text[],
                            \(events.map(\.eventType))::text[], \(events.map(\.event))::text[],
                            \(events.map { $0.fixAcceptedAt ?? Date(timeIntervalSince1970: 0) })::timestamptz[],
                            \(logged.map(\.projectId))::text[], \(logged.map(\.zoneId))::text[],
                            \(logged.map(\.eventTime))::timestamptz[], \(logged.map(\.sequence))::int8[])
                     WITH ORDINALITY
                     AS e(partition, topic, device_id, event_id, event_type, event, fix_accepted_at, project_id, zone_id,
                          event_time, sequence, ordinal)
            ), logged AS (
                INSERT INTO event_log (project_id, event_id, device_id, zone_id, event_type, event_time, sequence, event)
                SELECT e.project_id, e.event_id, e.device_id, e.zone_id, e.event_type, e.event_time, e.sequence, e.event
                  FROM e WHERE e.project_id <> '' ORDER BY e.ordinal
            )
            INSERT INTO event_outbox (consumer_group, source_topic, source_partition, topic, device_id, event_id,
                                      event_type, event, fix_accepted_at, created_at)
            SELECT \(group), \(sourceTopic), e.partition, e.topic, e.device_id, e.event_id, e.event_type, e.event,
                   NULLIF(e.fix_accepted_at, 'epoch'), clock_timestamp()
            FROM e
            ORDER BY e.ordinal
            """, logger: logger)
    }

    /// The oldest waiting events of each of these partitions (-1: of no known partition), at
    /// most `limit` of each, each partition's in the order they were decided. Each partition
    /// is read on its own in id order from the index, so that one partition's backlog
    /// neither crowds the others out nor costs a sort.
    package func waiting(group: String, sourceTopic: String, partitions: [Int32], limit: Int) async throws
        -> [OutboxEvent]
    {
        let rows = try await database.client.query(
            """
            SELECT o.id, o.source_partition, o.topic, o.device_id, o.event_id, o.event_type, o.event, o.fix_accepted_at,
                   o.created_at
              FROM UNNEST(\(partitions.map(Int.init))::int4[]) AS p(partition)
             CROSS JOIN LATERAL (
                 SELECT * FROM event_outbox
                  WHERE consumer_group = \(group) AND source_topic = \(sourceTopic) AND source_partition = p.partition
                  ORDER BY id
                  LIMIT \(limit)) o
             ORDER BY o.id
            """, logger: logger)
        var events: [OutboxEvent] = []
        for try await (id, partition, topic, device, eventId, type, event, accepted, decided) in rows.decode(
            (Int64, Int32, String, String, String, String, String, Date?, Date).self)
        {
            events.append(
                OutboxEvent(
                    id: id, sourcePartition: partition, topic: topic, deviceId: device, eventId: eventId,
                    eventType: type, event: event, fixAcceptedAt: accepted, decidedAt: decided))
        }
        return events
    }

    /// Removes events the broker has (or that were set aside).
    package func remove(ids: [Int64]) async throws {
        guard !ids.isEmpty else { return }
        try await database.client.perform("DELETE FROM event_outbox WHERE id = ANY(\(ids)::int8[])", logger: logger)
    }
}
