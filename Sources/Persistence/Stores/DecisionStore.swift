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
    /// When the batch that decided it committed (the evaluator's clock).
    public var evaluatedAt: Date

    public init(
        key: DeviceKey, fixId: String?, fixTime: Date, mode: FixMode, location: DecisionLocation, entriesJSON: String?,
        eventIds: [String], evaluatedAt: Date = Date()
    ) {
        self.key = key
        self.fixId = fixId
        self.fixTime = fixTime
        self.mode = mode
        self.location = location
        self.entriesJSON = entriesJSON
        self.eventIds = eventIds
        self.evaluatedAt = evaluatedAt
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

    /// Appends records, in the order the fixes were evaluated, with one `COPY` (the cheapest
    /// way into Postgres: no statement to plan, no arrays to unpack), then removes those of
    /// devices erased after they were evaluated (a batch that committed just before an
    /// erasure may be written just after it).
    public func append(_ records: [NewDecisionRecord], on connection: PostgresConnection) async throws {
        guard !records.isEmpty else { return }
        var rows = ByteBuffer()
        rows.reserveCapacity(records.count * 160)
        for record in records {
            rows.writeString("\(record.key.recordKey)\t")
            Self.writeText(record.key.projectId, to: &rows)
            Self.writeText(record.key.deviceId, to: &rows)
            Self.writeText(record.fixId, to: &rows)
            rows.writeString(RFC3339.format(record.fixTime) + "\t" + RFC3339.format(record.evaluatedAt) + "\t")
            rows.writeString(record.mode.rawValue + "\t")
            rows.writeString("\(record.location.lat)\t\(record.location.lon)\t")
            for value in [record.location.accuracy, record.location.speed, record.location.bearing] {
                rows.writeString(value.map { "\($0)\t" } ?? "\\N\t")
            }
            Self.writeText(record.entriesJSON, to: &rows)
            if record.eventIds.isEmpty {
                rows.writeString("\\N\n")
            } else {
                rows.writeString("{" + record.eventIds.joined(separator: ",") + "}\n")
            }
        }
        try await connection.copyFrom(
            table: "decision_records",
            columns: [
                "device_key", "project_id", "device_id", "fix_id", "fix_time", "evaluated_at", "mode", "lat", "lon",
                "accuracy", "speed", "bearing", "entries", "event_ids",
            ], logger: logger
        ) { writer in
            try await writer.write(rows)
        }
        try await connection.query(
            """
            DELETE FROM decision_records d USING device_erasures e
             WHERE e.erased_at > now() - interval '1 hour' AND d.device_key = e.device_key
               AND d.evaluated_at <= e.erased_at
            """, logger: logger)
    }

    /// A text column of COPY's text format, then its tab: backslash, tab and line breaks escaped; nil is `\N`.
    static func writeText(_ text: String?, to rows: inout ByteBuffer) {
        guard let text else {
            rows.writeString("\\N\t")
            return
        }
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\\"): rows.writeString("\\\\")
            case UInt8(ascii: "\t"): rows.writeString("\\t")
            case UInt8(ascii: "\n"): rows.writeString("\\n")
            case UInt8(ascii: "\r"): rows.writeString("\\r")
            default: rows.writeInteger(byte)
            }
        }
        rows.writeInteger(UInt8(ascii: "\t"))
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
            if deleted < batchSize {
                try await client.query(
                    "DELETE FROM device_erasures WHERE erased_at < \(now.addingTimeInterval(-7200))", logger: logger)
                return purged
            }
            try await Task.sleep(for: pause)
        }
    }
}
