import Foundation
import Logging
import PostgresNIO
import Shared

/// What is kept about one device, for those who ask why it did or did not check in: its
/// state as the evaluator last wrote it and its decision records (SPEC section 6).
public struct DeviceRecords: Sendable {
    let database: Database
    let logger: Logger
    let decisions: DecisionStore

    public init(database: Database, logger: Logger) {
        self.database = database
        self.logger = logger
        self.decisions = DecisionStore(logger: logger)
    }

    /// The project's event log, which the device's events are part of.
    public var eventLog: EventLogStore { EventLogStore(database: database, logger: logger) }

    /// The device's stored state row; nil when the device has none (never seen, or purged).
    public struct StateRow: Sendable {
        public var state: [UInt8]
        public var staleAt: Date?
        public var lastFixAt: Date?
    }

    public func state(projectId: String, deviceId: String) async throws -> StateRow? {
        let rows = try await database.client.query(
            """
            SELECT \(unescaped: DeviceStateStore.storedState), s.stale_at, s.last_fix_at
              FROM device_states s WHERE s.project_id = \(projectId) AND s.device_id = \(deviceId)
            """, logger: logger)
        for try await (state, staleAt, lastFixAt) in rows.decode((ByteBuffer, Date?, Date?).self) {
            return StateRow(state: Array(state.readableBytesView), staleAt: staleAt, lastFixAt: lastFixAt)
        }
        return nil
    }

    /// A page of the device's decision records, newest first.
    public func decisions(projectId: String, deviceId: String, before cursor: Int64?, limit: Int) async throws -> DecisionPage {
        try await decisions.page(projectId: projectId, deviceId: deviceId, before: cursor, limit: limit, on: database.client)
    }

    /// The newest entry about each of `zoneIds` among the device's last `scanning` records.
    public func latestEntries(
        projectId: String, deviceId: String, zoneIds: Set<String>, scanning: Int = 200
    ) async throws -> [String: DecisionEntry] {
        guard !zoneIds.isEmpty else { return [:] }
        let page = try await decisions(projectId: projectId, deviceId: deviceId, before: nil, limit: scanning)
        var found: [String: DecisionEntry] = [:]
        for record in page.records {
            for entry in record.entries.reversed() {
                guard let zoneId = entry.zoneId, zoneIds.contains(zoneId), found[zoneId] == nil else { continue }
                found[zoneId] = entry
            }
            if found.count == zoneIds.count { break }
        }
        return found
    }
}

/// What erasing a device removed.
public struct DeviceErasure: Sendable, Codable, Equatable {
    public var deviceId: String
    /// 1 when the device had a state.
    public var states: Int
    public var decisionRecords: Int
    public var loggedEvents: Int
    /// Events decided but not yet published, which now never will be.
    public var unpublishedEvents: Int
    /// Deliveries whose payload was erased: delivered or failed ones keep their status,
    /// undelivered ones are cancelled.
    public var deliveriesErased: Int
    public var deliveriesCancelled: Int

    public var removedAnything: Bool {
        states + decisionRecords + loggedEvents + unpublishedEvents + deliveriesErased > 0
    }
}

extension DeviceRecords {
    /// Erases what is kept about a device (location data is personal data): its state, its
    /// decision records, its events in the log and in the outbox, and the payloads of its
    /// deliveries, whose undelivered ones are cancelled. One transaction, after the device's
    /// state is locked: a batch evaluating the device commits first, and what it wrote is
    /// erased too; the device's next fix starts a new state (its events numbered from 1).
    /// A delivery being sent meanwhile finishes, but its result is not recorded over the erasure.
    public func erase(projectId: String, deviceId: String) async throws -> DeviceErasure {
        try await database.withTransaction { connection in
            func count(_ rows: PostgresRowSequence) async throws -> Int {
                var count = 0
                for try await _ in rows { count += 1 }
                return count
            }
            let states = try await count(
                connection.query(
                    """
                    WITH locked AS (
                        SELECT project_id, device_id FROM device_states
                         WHERE project_id = \(projectId) AND device_id = \(deviceId) FOR UPDATE
                    )
                    DELETE FROM device_states s USING locked
                     WHERE s.project_id = locked.project_id AND s.device_id = locked.device_id RETURNING 1
                    """, logger: logger))
            try await connection.perform(
                """
                INSERT INTO device_erasures (device_key, erased_at)
                VALUES (\(DeviceKey(projectId: projectId, deviceId: deviceId).recordKey), clock_timestamp())
                """, logger: logger)
            var decisions = 0
            for try await recordCount in try await connection.query(
                """
                DELETE FROM decision_records
                 WHERE device_key = \(DeviceKey(projectId: projectId, deviceId: deviceId).recordKey)
                   AND project_id = \(projectId) AND device_id = \(deviceId) RETURNING record_count
                """,
                logger: logger
            ).decode(Int.self) {
                decisions += recordCount
            }
            let logged = try await count(
                connection.query(
                    "DELETE FROM event_log WHERE project_id = \(projectId) AND device_id = \(deviceId) RETURNING 1",
                    logger: logger))
            let unpublished = try await count(
                connection.query(
                    """
                    DELETE FROM event_outbox
                     WHERE device_id = \(deviceId) AND (event::jsonb ->> 'projectId') = \(projectId) RETURNING 1
                    """, logger: logger))
            var erased = 0
            var cancelled = 0
            let rows = try await connection.query(
                Self.erasingDeliveriesStatement(projectId: projectId, deviceId: deviceId), logger: logger)
            var eventIds: [String] = []
            for try await (wasCancelled, eventId) in rows.decode((Bool, String).self) {
                erased += 1
                if wasCancelled { cancelled += 1 }
                eventIds.append(eventId)
            }
            // Their events' bodies, kept once for all endpoints, after the deliveries (the
            // order queueing takes them in). Kept empty: a delivery still finds one.
            try await connection.perform(
                """
                UPDATE event_payloads SET payload = ''
                 WHERE project_id = \(projectId) AND event_id = ANY(\(eventIds)::text[]) AND payload <> ''
                """, logger: logger)
            return DeviceErasure(
                deviceId: deviceId, states: states, decisionRecords: decisions, loggedEvents: logged,
                unpublishedEvents: unpublished, deliveriesErased: erased, deliveriesCancelled: cancelled)
        }
    }

    /// The statement of `erase` that erases the device's deliveries (the pending ones are
    /// cancelled), on its own so that its plan can be checked. They are found through the
    /// project's endpoints, by endpoint and device in the device-order index. Found by project
    /// and device, they were read from every delivery the table holds.
    static func erasingDeliveriesStatement(projectId: String, deviceId: String) -> PostgresQuery {
        """
        UPDATE deliveries
           SET sequence = NULL, erased_at = now(), lease_owner = NULL, leased_until = NULL,
               status = CASE WHEN status = 'pending' THEN 'cancelled' ELSE status END,
               last_error = CASE WHEN status = 'pending' THEN 'cancelled: the device was erased' ELSE last_error END
         WHERE endpoint_id = ANY(\(endpointIdsOf: projectId))
           AND device_id = \(deviceId) AND project_id = \(projectId) AND erased_at IS NULL
        RETURNING status = 'cancelled', event_id
        """
    }
}
