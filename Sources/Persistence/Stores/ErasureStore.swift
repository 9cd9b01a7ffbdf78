import Foundation
import Logging
import PostgresNIO
import Shared

/// Where an erasure marker landed on the fixes topic: the device's fixes at lower offsets of
/// this partition were accepted before the erasure, the ones after it start the device afresh.
package struct ErasurePosition: Sendable, Hashable {
    package var topic: String
    package var partition: Int32
    package var offset: Int64

    package init(topic: String, partition: Int32, offset: Int64) {
        self.topic = topic
        self.partition = partition
        self.offset = offset
    }
}

/// What erasing a device removed.
package struct DeviceErasure: Sendable, Codable, Equatable {
    package var deviceId: String
    /// 1 when the device had a state.
    package var states: Int
    package var decisionRecords: Int
    package var loggedEvents: Int
    /// Events decided but not yet published, which now never will be.
    package var unpublishedEvents: Int
    /// Deliveries whose payload was erased: delivered or failed ones keep their status,
    /// undelivered ones are cancelled.
    package var deliveriesErased: Int
    package var deliveriesCancelled: Int

    package init(
        deviceId: String, states: Int = 0, decisionRecords: Int = 0, loggedEvents: Int = 0, unpublishedEvents: Int = 0,
        deliveriesErased: Int = 0, deliveriesCancelled: Int = 0
    ) {
        self.deviceId = deviceId
        self.states = states
        self.decisionRecords = decisionRecords
        self.loggedEvents = loggedEvents
        self.unpublishedEvents = unpublishedEvents
        self.deliveriesErased = deliveriesErased
        self.deliveriesCancelled = deliveriesCancelled
    }
}

/// The erasures carried out at positions an evaluator's batch is about to pass, by device:
/// a fix of one of these devices at a lower offset of the same partition is not evaluated.
package struct ErasureMarks: Sendable {
    /// The highest marker offset per device (`DeviceKey.recordKey`) and partition.
    var markers: [Int64: [Int32: Int64]] = [:]

    package init() {}

    package mutating func add(deviceKey: Int64, partition: Int32, offset: Int64) {
        markers[deviceKey, default: [:]][partition] = max(markers[deviceKey]?[partition] ?? offset, offset)
    }

    /// Whether the fix of `key` at `offset` of `partition` was accepted before an erasure of its device.
    package func erases(_ key: DeviceKey, partition: Int32, offset: Int64) -> Bool {
        guard !markers.isEmpty, let marker = markers[key.recordKey]?[partition] else { return false }
        return offset < marker
    }

    package var isEmpty: Bool { markers.isEmpty }
}

/// Erasing a device exactly (docs/evaluation-rules.md#device-erasure): what was accepted before
/// the erasure is told from what comes after by the position of an erasure marker on the
/// device's partition of the fixes topic, never by comparing clocks.
///
/// An erasure is requested (a row), its marker written to the topic, then carried out at the
/// marker's position, once, by whichever comes first: the request, or the evaluator reaching
/// the marker. Carrying it out removes what is stored (state, decision records, the event log,
/// the outbox, delivery payloads; undelivered deliveries are cancelled) and names the device's
/// events in `erased_events`, so that the copies still on the event topics never become
/// deliveries. Writers that could commit something of the device's old life after the erasure
/// serialize with it on two advisory locks:
/// - the position lock of a fixes partition, held shared by an evaluator's batch and by the
///   decision recorder, exclusively by the erasure (so each either committed before it, and is
///   erased with the rest, or sees its marker, and drops the device's earlier fixes);
/// - the intake lock of a project, held shared by the notifier's queueing, exclusively by the
///   sweep that follows an erasure (so a delivery queued while the erasure ran is cancelled).
package struct ErasureStore: Sendable {
    let database: Database
    let logger: Logger

    package init(database: Database, logger: Logger) {
        self.database = database
        self.logger = logger
    }

    /// How long erasures and erased event ids are kept: longer than the topics keep records
    /// (Kafka's default retention is 7 days), so that a replay of the topics honours them.
    package static let retention: Duration = .seconds(30 * 86_400)

    /// The first advisory lock key of a project's intake lock; the position locks use the
    /// topic's `hashtext`.
    static let intakeLockClass: Int32 = 0x4572_6173

    // MARK: Requesting and carrying out

    /// Records that the device is to be erased; the marker written next carries the id.
    package func request(projectId: String, deviceId: String) async throws -> Int64 {
        let key = DeviceKey(projectId: projectId, deviceId: deviceId).recordKey
        let rows = try await database.client.query(
            "INSERT INTO erasures (project_id, device_key) VALUES (\(projectId), \(key)) RETURNING id", logger: logger)
        for try await id in rows.decode(Int64.self) { return id }
        throw ErasureNotRecorded()
    }

    /// Carries out the erasure at its marker's position, unless the evaluator reached the
    /// marker first and did; either way returns what carrying it out removed, or nil when
    /// there is no such erasure of this device.
    package func carryOut(id: Int64, projectId: String, deviceId: String, at position: ErasurePosition) async throws
        -> DeviceErasure?
    {
        try await database.withTransaction { connection in
            if let erasure = try await carryOut(id: id, projectId: projectId, deviceId: deviceId, at: position, on: connection) {
                return erasure
            }
            let rows = try await connection.query(
                """
                SELECT removed::text FROM erasures
                 WHERE id = \(id) AND project_id = \(projectId)
                   AND device_key = \(DeviceKey(projectId: projectId, deviceId: deviceId).recordKey) AND state = 'erased'
                """, logger: logger)
            for try await removed in rows.decode(String?.self) {
                var erasure =
                    try removed.map { try JSONDecoder().decode(DeviceErasure.self, from: Data($0.utf8)) }
                    ?? DeviceErasure(deviceId: deviceId)
                erasure.deviceId = deviceId
                return erasure
            }
            return nil
        }
    }

    /// Carries out a requested erasure at `position`, in the caller's transaction (the
    /// evaluator's batch, or `carryOut`); nil when it is not a requested erasure of this
    /// device (carried out already, or a marker nobody requested).
    ///
    /// It first holds the position lock of the marker's partition exclusively: a batch of
    /// that partition, or a write of its decision records, commits first and is erased too.
    package func carryOut(
        id: Int64, projectId: String, deviceId: String, at position: ErasurePosition, on connection: PostgresConnection
    ) async throws -> DeviceErasure? {
        let key = DeviceKey(projectId: projectId, deviceId: deviceId).recordKey
        try await connection.perform(
            "SELECT pg_advisory_xact_lock(hashtext(\(position.topic)), \(position.partition)::int4)", logger: logger)
        let claimed = try await connection.query(
            """
            UPDATE erasures
               SET state = 'erased', topic = \(position.topic), partition = \(Int(position.partition)),
                   marker_offset = \(position.offset), erased_at = now()
             WHERE id = \(id) AND project_id = \(projectId) AND device_key = \(key) AND state = 'requested'
            RETURNING id
            """, logger: logger)
        var found = false
        for try await _ in claimed { found = true }
        guard found else { return nil }

        var erasure = DeviceErasure(deviceId: deviceId)
        erasure.states = try await count(
            connection.query(
                """
                WITH locked AS (
                    SELECT project_id, device_id FROM device_states
                     WHERE project_id = \(projectId) AND device_id = \(deviceId) FOR UPDATE
                )
                DELETE FROM device_states s USING locked
                 WHERE s.project_id = locked.project_id AND s.device_id = locked.device_id RETURNING 1
                """, logger: logger))
        for try await recordCount in try await connection.query(
            """
            DELETE FROM decision_records
             WHERE device_key = \(key) AND project_id = \(projectId) AND device_id = \(deviceId) RETURNING record_count
            """, logger: logger
        ).decode(Int.self) {
            erasure.decisionRecords += recordCount
        }
        var eventIds: [String] = []
        for try await eventId in try await connection.query(
            "DELETE FROM event_log WHERE project_id = \(projectId) AND device_id = \(deviceId) RETURNING event_id",
            logger: logger
        ).decode(String.self) {
            eventIds.append(eventId)
            erasure.loggedEvents += 1
        }
        for try await eventId in try await connection.query(
            """
            DELETE FROM event_outbox
             WHERE device_id = \(deviceId) AND (event::jsonb ->> 'projectId') = \(projectId) RETURNING event_id
            """, logger: logger
        ).decode(String.self) {
            eventIds.append(eventId)
            erasure.unpublishedEvents += 1
        }
        try await nameErased(eventIds, projectId: projectId, erasureId: id, on: connection)
        let (erased, cancelled) = try await eraseDeliveries(
            projectId: projectId, deviceId: deviceId, erasureId: id, onlyErasedEvents: false, on: connection)
        erasure.deliveriesErased = erased
        erasure.deliveriesCancelled = cancelled
        // Without the device's id: only its digest is kept.
        var counts = erasure
        counts.deviceId = ""
        let removed = String(decoding: try JSONEncoder().encode(counts), as: UTF8.self)
        try await connection.perform("UPDATE erasures SET removed = \(removed)::jsonb WHERE id = \(id)", logger: logger)
        return erasure
    }

    /// Cancels the deliveries of the erased events that were queued while the erasure ran
    /// (their queueing began before it committed), after every queueing of the project that
    /// began before it has committed. Returns how many it erased and cancelled.
    package func sweep(id: Int64, projectId: String, deviceId: String) async throws -> (erased: Int, cancelled: Int) {
        try await database.withTransaction { connection in
            try await connection.perform(
                "SELECT pg_advisory_xact_lock(\(Self.intakeLockClass), hashtext(\(projectId)))", logger: logger)
            return try await eraseDeliveries(
                projectId: projectId, deviceId: deviceId, erasureId: id, onlyErasedEvents: true, on: connection)
        }
    }

    /// Erases the device's deliveries (cancelling the pending ones) and their events' bodies,
    /// and names their events as erased. `onlyErasedEvents`: only those of events the erasure
    /// named already (after it, the device's new events are queued under the same id).
    func eraseDeliveries(
        projectId: String, deviceId: String, erasureId: Int64, onlyErasedEvents: Bool, on connection: PostgresConnection
    ) async throws -> (erased: Int, cancelled: Int) {
        var erased = 0
        var cancelled = 0
        var eventIds: [String] = []
        let rows = try await connection.query(
            Self.erasingDeliveriesStatement(projectId: projectId, deviceId: deviceId, onlyErasedEvents: onlyErasedEvents),
            logger: logger)
        for try await (wasCancelled, eventId) in rows.decode((Bool, String).self) {
            erased += 1
            if wasCancelled { cancelled += 1 }
            eventIds.append(eventId)
        }
        try await nameErased(eventIds, projectId: projectId, erasureId: erasureId, on: connection)
        return (erased, cancelled)
    }

    /// Names events as erased and empties their bodies (kept empty: a delivery still finds one).
    func nameErased(_ eventIds: [String], projectId: String, erasureId: Int64, on connection: PostgresConnection) async throws {
        guard !eventIds.isEmpty else { return }
        try await connection.perform(
            """
            INSERT INTO erased_events (project_id, event_id, erasure_id)
            SELECT \(projectId), e.id, \(erasureId) FROM (SELECT DISTINCT unnest(\(eventIds)::text[]) AS id ORDER BY 1) e
            ON CONFLICT (project_id, event_id) DO NOTHING
            """, logger: logger)
        try await connection.perform(
            """
            UPDATE event_payloads SET payload = ''
             WHERE project_id = \(projectId) AND event_id = ANY(\(eventIds)::text[]) AND payload <> ''
            """, logger: logger)
    }

    /// The statement that erases the device's deliveries (the pending ones are cancelled, and
    /// none keeps the device's id), on its own so that its plan can be checked. They are found
    /// through the project's endpoints, by endpoint and device in the device-order index.
    /// Found by project and device, they were read from every delivery the table holds.
    static func erasingDeliveriesStatement(projectId: String, deviceId: String, onlyErasedEvents: Bool = false) -> PostgresQuery {
        var query: PostgresQuery = """
            UPDATE deliveries
               SET sequence = NULL, erased_at = now(), lease_owner = NULL, leased_until = NULL, device_id = '',
                   status = CASE WHEN status = 'pending' THEN 'cancelled' ELSE status END,
                   last_error = CASE WHEN status = 'pending' THEN 'cancelled: the device was erased' ELSE last_error END
             WHERE endpoint_id = ANY(\(endpointIdsOf: projectId))
               AND device_id = \(deviceId) AND project_id = \(projectId) AND erased_at IS NULL
            """
        if onlyErasedEvents {
            query.sql += """

                   AND EXISTS (SELECT 1 FROM erased_events x WHERE x.project_id = deliveries.project_id
                                  AND x.event_id = deliveries.event_id)
                """
        }
        query.sql += "\nRETURNING status = 'cancelled', event_id"
        return query
    }

    // MARK: The writers' side

    /// Holds the position locks of these fixes partitions (shared) until the caller's
    /// transaction ends: an erasure at one of them waits for it, or it for the erasure.
    package static func holdPositions(topic: String, partitions: some Collection<Int32>, on connection: PostgresConnection, logger: Logger)
        async throws
    {
        guard !partitions.isEmpty else { return }
        try await connection.perform(
            """
            SELECT pg_advisory_xact_lock_shared(hashtext(\(topic)), p)
              FROM (SELECT DISTINCT unnest(\(Set(partitions).map(Int.init))::int4[]) AS p ORDER BY 1) s
            """, logger: logger)
    }

    /// Holds the intake locks of these projects (shared) until the caller's transaction ends:
    /// the sweep after an erasure waits for the queueing, or the queueing for the sweep.
    static func holdIntake(projects: some Collection<String>, on connection: PostgresConnection, logger: Logger) async throws {
        guard !projects.isEmpty else { return }
        try await connection.perform(
            """
            SELECT pg_advisory_xact_lock_shared(\(Self.intakeLockClass), hashtext(p))
              FROM (SELECT DISTINCT unnest(\(Array(Set(projects)))::text[]) AS p ORDER BY 1) s
            """, logger: logger)
    }

    /// The erasures carried out at positions past `firstOffsets` (the first offset of each
    /// partition a batch holds), in the caller's transaction, after `holdPositions`.
    package func marks(topic: String, from firstOffsets: [Int32: Int64], on connection: PostgresConnection) async throws
        -> ErasureMarks
    {
        var marks = ErasureMarks()
        guard !firstOffsets.isEmpty else { return marks }
        let partitions = Array(firstOffsets.keys)
        let rows = try await connection.query(
            """
            SELECT e.device_key, e.partition, e.marker_offset
              FROM UNNEST(\(partitions.map(Int.init))::int4[], \(partitions.map { firstOffsets[$0]! })::int8[])
                   AS b(partition, first_offset)
             CROSS JOIN LATERAL (
                 SELECT e.device_key, e.partition, e.marker_offset FROM erasures e
                  WHERE e.state = 'erased' AND e.topic = \(topic) AND e.partition = b.partition
                    AND e.marker_offset > b.first_offset) e
            """, logger: logger)
        for try await (deviceKey, partition, offset) in rows.decode((Int64, Int32, Int64).self) {
            marks.add(deviceKey: deviceKey, partition: partition, offset: offset)
        }
        return marks
    }

    /// Removes erasures and erased event ids past their retention, and requests never carried out.
    package func purge(before cutoff: Date) async throws -> Int {
        try await database.withTransaction { connection in
            var purged: [Int64] = []
            for try await id in try await connection.query(
                "DELETE FROM erasures WHERE requested_at < \(cutoff) RETURNING id", logger: logger
            ).decode(Int64.self) {
                purged.append(id)
            }
            if !purged.isEmpty {
                try await connection.perform(
                    "DELETE FROM erased_events WHERE erasure_id = ANY(\(purged)::int8[])", logger: logger)
            }
            return purged.count
        }
    }

    private func count(_ rows: PostgresRowSequence) async throws -> Int {
        var count = 0
        for try await _ in rows { count += 1 }
        return count
    }
}

/// The erasure request could not be recorded.
struct ErasureNotRecorded: Error, CustomStringConvertible {
    var description: String { "the erasure request was not recorded" }
}
