import Foundation
import Logging
import PostgresNIO

/// Identifies one device of one project: the unit of evaluation state.
package struct DeviceKey: Sendable, Hashable, Comparable {
    package var projectId: String
    package var deviceId: String

    package init(projectId: String, deviceId: String) {
        self.projectId = projectId
        self.deviceId = deviceId
    }

    package static func < (lhs: DeviceKey, rhs: DeviceKey) -> Bool {
        (lhs.projectId, lhs.deviceId) < (rhs.projectId, rhs.deviceId)
    }

    /// A 64-bit FNV-1a digest of the project and the device, by which the device's decision
    /// records are indexed (stable across processes and versions: it is stored).
    package var recordKey: Int64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        func add(_ byte: UInt8) {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01B3
        }
        for byte in projectId.utf8 { add(byte) }
        add(0)
        for byte in deviceId.utf8 { add(byte) }
        return Int64(bitPattern: hash)
    }
}

/// A device's engine state as stored: the bytes the engine wrote (its binary encoding,
/// or JSON in rows from before it), plus the columns the stale check-out sweep queries by.
package struct StoredDeviceState: Sendable {
    package var key: DeviceKey
    package var state: [UInt8]
    package var lastFixAt: Date?
    /// When a stale check-out is due; nil when the device is checked into nothing that can time out.
    package var staleAt: Date?
    /// The fixes topic's partition the device's fixes come from: its owner judges the
    /// stale check-out, against how far that partition has been consumed.
    package var partition: Int32?

    package init(key: DeviceKey, state: [UInt8], lastFixAt: Date?, staleAt: Date?, partition: Int32? = nil) {
        self.key = key
        self.state = state
        self.lastFixAt = lastFixAt
        self.staleAt = staleAt
        self.partition = partition
    }
}

/// Device states, read and written inside the caller's transaction so that the
/// state, the consumer offsets and the decision they led to commit together.
package struct DeviceStateStore: Sendable {
    let logger: Logger

    package init(logger: Logger) {
        self.logger = logger
    }

    /// Loads and row-locks the states of these devices (absent: never seen). Locks are
    /// taken in key order so that concurrent batches cannot deadlock.
    package func lockStates(_ keys: Set<DeviceKey>, on connection: PostgresConnection) async throws -> [DeviceKey: [UInt8]] {
        let sorted = keys.sorted()
        let projects = sorted.map(\.projectId)
        let devices = sorted.map(\.deviceId)
        let rows = try await connection.query(
            """
            SELECT s.project_id, s.device_id, \(unescaped: Self.storedState)
            FROM device_states s
            JOIN UNNEST(\(projects)::text[], \(devices)::text[]) AS k(project_id, device_id)
              ON s.project_id = k.project_id AND s.device_id = k.device_id
            ORDER BY s.project_id, s.device_id
            FOR UPDATE OF s
            """, logger: logger)
        var states: [DeviceKey: [UInt8]] = [:]
        for try await (project, device, state) in rows.decode((String, String, ByteBuffer).self) {
            states[DeviceKey(projectId: project, deviceId: device)] = Array(state.readableBytesView)
        }
        return states
    }

    /// The state column as the engine reads it: the binary encoding, or the JSON of a row
    /// not rewritten since states were stored in binary.
    static let storedState = "COALESCE(s.state_binary, convert_to(s.state::text, 'UTF8'))"

    package func save(_ states: [StoredDeviceState], on connection: PostgresConnection) async throws {
        guard !states.isEmpty else { return }
        let sorted = states.sorted { $0.key < $1.key }
        let epoch = Date(timeIntervalSince1970: 0)
        try await connection.perform(
            """
            INSERT INTO device_states (project_id, device_id, state_binary, last_fix_at, stale_at, stale_minute, partition, updated_at)
            SELECT s.project_id, s.device_id, s.state, NULLIF(s.last_fix_at, 'epoch'::timestamptz),
                   NULLIF(s.stale_at, 'epoch'::timestamptz),
                   -- The minute the deadline falls in (rounded down), by which the sweep finds it: it
                   -- changes once a minute at most, so the writes between are heap-only updates.
                   date_bin('1 minute', NULLIF(s.stale_at, 'epoch'::timestamptz), TIMESTAMPTZ 'epoch'),
                   NULLIF(s.partition, -1), now()
            FROM UNNEST(\(sorted.map(\.key.projectId))::text[], \(sorted.map(\.key.deviceId))::text[],
                        \(sorted.map { ByteBuffer(bytes: $0.state) })::bytea[], \(sorted.map { $0.lastFixAt ?? epoch })::timestamptz[],
                        \(sorted.map { $0.staleAt ?? epoch })::timestamptz[], \(sorted.map { Int($0.partition ?? -1) })::int4[])
                 AS s(project_id, device_id, state, last_fix_at, stale_at, partition)
            ON CONFLICT (project_id, device_id) DO UPDATE
               SET state_binary = EXCLUDED.state_binary, state = NULL, last_fix_at = EXCLUDED.last_fix_at,
                   stale_at = EXCLUDED.stale_at, stale_minute = EXCLUDED.stale_minute, partition = COALESCE(EXCLUDED.partition, device_states.partition),
                   updated_at = now()
            """, logger: logger)
    }

    /// One step of a walk through every state in key order: the next `limit` devices after
    /// `cursor`, each with its state when it was last written before `cutoff` (a candidate
    /// for deletion). `last` is where the next step starts; nil when the walk is over.
    package func scanSilent(after cursor: DeviceKey?, cutoff: Date, limit: Int, on connection: PostgresConnection) async throws
        -> (candidates: [(key: DeviceKey, state: [UInt8])], last: DeviceKey?)
    {
        let rows = try await connection.query(
            """
            SELECT s.project_id, s.device_id, CASE WHEN s.updated_at < \(cutoff) THEN \(unescaped: Self.storedState) END
              FROM device_states s
             WHERE (s.project_id, s.device_id) > (\(cursor?.projectId ?? ""), \(cursor?.deviceId ?? ""))
             ORDER BY s.project_id, s.device_id
             LIMIT \(limit)
            """, logger: logger)
        var candidates: [(key: DeviceKey, state: [UInt8])] = []
        var last: DeviceKey?
        var scanned = 0
        for try await (project, device, state) in rows.decode((String, String, ByteBuffer?).self) {
            let key = DeviceKey(projectId: project, deviceId: device)
            if let state { candidates.append((key, Array(state.readableBytesView))) }
            last = key
            scanned += 1
        }
        return (candidates, scanned < limit ? nil : last)
    }

    /// Deletes these devices' states if they are still unwritten since before `cutoff` (a
    /// device heard from meanwhile stays); rows a batch holds are skipped, never waited for.
    package func delete(_ keys: [DeviceKey], writtenBefore cutoff: Date, on connection: PostgresConnection) async throws -> Int {
        guard !keys.isEmpty else { return 0 }
        let rows = try await connection.query(
            """
            WITH doomed AS (
                SELECT s.project_id, s.device_id FROM device_states s
                  JOIN UNNEST(\(keys.map(\.projectId))::text[], \(keys.map(\.deviceId))::text[]) AS k(project_id, device_id)
                    ON s.project_id = k.project_id AND s.device_id = k.device_id
                 WHERE s.updated_at < \(cutoff)
                   FOR UPDATE OF s SKIP LOCKED
            )
            DELETE FROM device_states s USING doomed
             WHERE s.project_id = doomed.project_id AND s.device_id = doomed.device_id
            RETURNING 1
            """, logger: logger)
        var deleted = 0
        for try await _ in rows { deleted += 1 }
        return deleted
    }

    /// Devices whose stale check-out is due, locked; rows another worker holds are skipped.
    ///
    /// A device is due when its deadline has passed and its partition's stream has been
    /// consumed past it (`consumer_offsets.consumed_until` of `group` on `topic`): a
    /// backlog still waiting in the topic may hold its next fix. Only devices of
    /// `partitions` (those the caller owns) are claimed, and devices whose partition is
    /// not known yet (rows older than the column) once every partition has been consumed
    /// past their deadline.
    package func claimStale(
        dueBy now: Date, group: String, topic: String, partitions: [Int32], limit: Int, on connection: PostgresConnection
    ) async throws -> [StoredDeviceState] {
        let rows = try await connection.query(
            """
            SELECT s.project_id, s.device_id, \(unescaped: Self.storedState), s.last_fix_at, s.stale_at, s.partition
            FROM device_states s
            WHERE s.stale_minute <= \(now) AND s.stale_at <= \(now)
              AND ((s.partition = ANY(\(partitions.map(Int.init))::int4[])
                    AND s.stale_at <= (SELECT o.consumed_until FROM consumer_offsets o
                                       WHERE o.consumer_group = \(group) AND o.topic = \(topic) AND o.partition = s.partition))
                OR (s.partition IS NULL
                    AND s.stale_at <= (SELECT CASE WHEN bool_and(o.consumed_until IS NOT NULL) THEN min(o.consumed_until) END
                                       FROM consumer_offsets o WHERE o.consumer_group = \(group) AND o.topic = \(topic))))
            ORDER BY s.stale_at
            LIMIT \(limit)
            FOR UPDATE OF s SKIP LOCKED
            """, logger: logger)
        var result: [StoredDeviceState] = []
        for try await (project, device, state, lastFixAt, staleAt, partition) in rows.decode(
            (String, String, ByteBuffer, Date?, Date?, Int32?).self)
        {
            result.append(
                StoredDeviceState(
                    key: DeviceKey(projectId: project, deviceId: device), state: Array(state.readableBytesView),
                    lastFixAt: lastFixAt,
                    staleAt: staleAt, partition: partition))
        }
        return result
    }
}
