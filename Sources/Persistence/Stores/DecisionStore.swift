import Foundation
import Logging
import PostgresNIO
import Shared

/// One fix's decision record as the evaluator hands it over: the entries already written
/// as JSON (nil when the fix concerned no zone), so that the batch transaction only ships
/// bytes. (Arrays of the query carry no NULLs: an absent value travels as "" or NaN.)
public struct NewDecisionRecord: Sendable {
    public var key: DeviceKey
    public var fixId: String?
    public var fixTime: Date
    public var mode: FixMode
    public var location: DecisionLocation
    public var entriesJSON: String?
    public var eventIds: [String]

    public init(
        key: DeviceKey, fixId: String?, fixTime: Date, mode: FixMode, location: DecisionLocation, entriesJSON: String?,
        eventIds: [String]
    ) {
        self.key = key
        self.fixId = fixId
        self.fixTime = fixTime
        self.mode = mode
        self.location = location
        self.entriesJSON = entriesJSON
        self.eventIds = eventIds
    }
}

/// A page of a device's decision records, newest first.
public struct DecisionPage: Sendable {
    public var records: [DecisionRecord]
    /// Where the next (older) page starts; nil when this one is the last.
    public var nextCursor: Int64?
}

/// The decision records of SPEC section 6: appended inside the evaluator's batch
/// transaction (a record exists only if the decision it tells of committed), read by
/// the management API and the CLI, purged past their retention.
public struct DecisionStore: Sendable {
    /// Each device's newest records are kept whatever their age.
    public static let keptPerDevice = 100
    let logger: Logger

    public init(logger: Logger) {
        self.logger = logger
    }

    /// Appends records, in the order the fixes were evaluated; those of devices that have no
    /// state (erased since) are left out.
    public func append(_ records: [NewDecisionRecord], on connection: PostgresConnection) async throws {
        guard !records.isEmpty else { return }
        try await connection.query(
            """
            INSERT INTO decision_records
                   (device_key, project_id, device_id, fix_id, fix_time, mode, lat, lon, accuracy, speed, bearing, entries,
                    event_ids)
            SELECT r.device_key, r.project_id, r.device_id, NULLIF(r.fix_id, ''), r.fix_time, r.mode, r.lat, r.lon,
                   NULLIF(r.accuracy, 'NaN'), NULLIF(r.speed, 'NaN'), NULLIF(r.bearing, 'NaN'),
                   NULLIF(r.entries, '')::jsonb, string_to_array(NULLIF(r.event_ids, ''), ',')
            FROM UNNEST(\(records.map(\.key.recordKey))::int8[], \(records.map(\.key.projectId))::text[], \(records.map(\.key.deviceId))::text[],
                        \(records.map { $0.fixId ?? "" })::text[], \(records.map(\.fixTime))::timestamptz[],
                        \(records.map(\.mode.rawValue))::text[], \(records.map(\.location.lat))::float8[],
                        \(records.map(\.location.lon))::float8[], \(records.map { $0.location.accuracy ?? .nan })::float8[],
                        \(records.map { $0.location.speed ?? .nan })::float8[],
                        \(records.map { $0.location.bearing ?? .nan })::float8[],
                        \(records.map { $0.entriesJSON ?? "" })::text[],
                        \(records.map { $0.eventIds.joined(separator: ",") })::text[])
                 WITH ORDINALITY
                 AS r(device_key, project_id, device_id, fix_id, fix_time, mode, lat, lon, accuracy, speed, bearing, entries,
                      event_ids, n)
            -- A device erased since its batch committed keeps none.
            WHERE EXISTS (SELECT 1 FROM device_states s WHERE s.project_id = r.project_id AND s.device_id = r.device_id)
            ORDER BY r.n
            """, logger: logger)
    }

    /// A device's records, newest first, `limit` of them from `cursor` (a page's `nextCursor`).
    public func page(
        projectId: String, deviceId: String, before cursor: Int64?, limit: Int, on client: PostgresClient
    ) async throws -> DecisionPage {
        let rows = try await client.query(
            """
            SELECT id, fix_id, fix_time, evaluated_at, mode, lat, lon, accuracy, speed, bearing, entries::text, event_ids
              FROM decision_records
             WHERE device_key = \(DeviceKey(projectId: projectId, deviceId: deviceId).recordKey)
               AND project_id = \(projectId) AND device_id = \(deviceId) AND id < \(cursor ?? Int64.max)
             ORDER BY id DESC
             LIMIT \(limit + 1)
            """, logger: logger)
        var records: [DecisionRecord] = []
        var lastId: Int64?
        var more = false
        for try await row in rows.decode(
            (Int64, String?, Date, Date, String, Double, Double, Double?, Double?, Double?, String?, [String]?).self)
        {
            if records.count == limit {
                more = true
                break
            }
            let (id, fixId, fixTime, evaluatedAt, mode, lat, lon, accuracy, speed, bearing, entries, eventIds) = row
            records.append(
                DecisionRecord(
                    fixId: fixId, timestamp: fixTime, evaluatedAt: evaluatedAt, mode: FixMode(rawValue: mode) ?? .normal,
                    location: DecisionLocation(lat: lat, lon: lon, accuracy: accuracy, speed: speed, bearing: bearing),
                    entries: try Self.decodeEntries(entries), eventIds: eventIds ?? []))
            lastId = id
        }
        return DecisionPage(records: records, nextCursor: more ? lastId : nil)
    }

    static func decodeEntries(_ json: String?) throws -> [DecisionEntry] {
        guard let json else { return [] }
        return try WireJSON.decoder().decode([DecisionEntry].self, from: Data(json.utf8))
    }

    /// Deletes records evaluated before `now - retention` that are not among their device's
    /// newest `keep`, `batchSize` rows per statement; returns how many it deleted.
    public func purge(
        olderThan retention: Duration, keep: Int, now: Date, batchSize: Int = 5000, pause: Duration = .milliseconds(50),
        on client: PostgresClient
    ) async throws -> Int {
        let cutoff = now.addingTimeInterval(-retention.seconds)
        var purged = 0
        while true {
            let rows = try await client.query(
                """
                WITH doomed AS (
                    SELECT d.device_key, d.id FROM decision_records d
                     WHERE d.evaluated_at < \(cutoff)
                       AND d.id <= (SELECT x.id FROM decision_records x
                                     WHERE x.device_key = d.device_key AND x.project_id = d.project_id
                                       AND x.device_id = d.device_id
                                     ORDER BY x.id DESC OFFSET \(keep) LIMIT 1)
                     LIMIT \(batchSize)
                )
                DELETE FROM decision_records d USING doomed
                 WHERE d.device_key = doomed.device_key AND d.id = doomed.id
                RETURNING 1
                """, logger: logger)
            var deleted = 0
            for try await _ in rows { deleted += 1 }
            purged += deleted
            if deleted < batchSize { return purged }
            try await Task.sleep(for: pause)
        }
    }
}
