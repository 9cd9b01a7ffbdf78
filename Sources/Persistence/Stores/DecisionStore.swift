import Foundation
import Logging
import PostgresNIO
import Shared

/// One fix's decision record as the evaluator hands it over, written out (as the JSON the
/// decisions API returns) by the recorder, off the batch loop.
package struct NewDecisionRecord: Sendable {
    package var key: DeviceKey
    package var record: DecisionRecord
    /// Where its fix was on the fixes topic: an erasure at a later position of the same
    /// partition erases it, whenever it is written.
    package var partition: Int32?
    package var offset: Int64?
    /// When the batch that decided it committed (the evaluator's clock).
    package var evaluatedAt: Date { record.evaluatedAt ?? .distantPast }

    package init(key: DeviceKey, record: DecisionRecord, partition: Int32? = nil, offset: Int64? = nil) {
        self.key = key
        self.record = record
        self.partition = partition
        self.offset = offset
    }
}

/// A page of a device's decision records, newest first.
package struct DecisionPage: Sendable {
    package var records: [DecisionRecord]
    /// Where the next (older) page starts; nil when this one is the last.
    package var nextCursor: Int64?
}

/// The decision records (docs/evaluation-rules.md#decision-records), written by the evaluator
/// after the batches that decided them committed, read by the management API and the CLI,
/// purged past their retention.
///
/// A row holds a run of one device's records written together, oldest first, one JSON
/// object per line: Postgres then stores one tuple and one index entry for the run and
/// parses no column of a record.
package struct DecisionStore: Sendable {
    /// Each device's newest records are kept whatever their age.
    package static let keptPerDevice = 100
    /// At most this many records share a row, so that purging, a row at a time, keeps
    /// fewer than `keptPerDevice + recordsPerRow` of a device past the retention.
    package static let recordsPerRow = 50
    let logger: Logger

    package init(logger: Logger) {
        self.logger = logger
    }

    /// Appends records, each device's in the order they were evaluated, with one `COPY`
    /// (no statement to plan, no arrays to unpack), then removes those of fixes that an
    /// erasure, by its marker's position, came after (a batch that committed just before an
    /// erasure may be written just after it). A row is named by its first (earliest) fix's
    /// position, so a row holding any record from before the marker goes whole, with the
    /// records of the device's new start beside it, rather than keep a position it was asked
    /// to forget. The caller holds the position locks of the records' partitions (`ErasureStore`).
    package func append(_ records: [NewDecisionRecord], on connection: PostgresConnection) async throws {
        guard !records.isEmpty else { return }
        var runs: [DeviceKey: [NewDecisionRecord]] = [:]
        var devices: [DeviceKey] = []
        for record in records {
            if runs[record.key] == nil { devices.append(record.key) }
            runs[record.key, default: []].append(record)
        }
        var rows = ByteBuffer()
        rows.reserveCapacity(records.count * 260)
        for key in devices {
            let deviceRecords = runs[key]!
            var start = 0
            while start < deviceRecords.count {
                let run = deviceRecords[start..<min(start + Self.recordsPerRow, deviceRecords.count)]
                rows.writeString("\(key.recordKey)\t")
                Self.writeText(key.projectId, to: &rows)
                Self.writeText(key.deviceId, to: &rows)
                rows.writeString(
                    RFC3339.format(run.last!.evaluatedAt) + "\t" + RFC3339.format(run.first!.evaluatedAt) + "\t\(run.count)\t")
                rows.writeString(
                    (run.first!.partition.map { String($0) } ?? "\\N") + "\t" + (run.first!.offset.map { String($0) } ?? "\\N")
                        + "\t")
                for (index, record) in zip(run.indices, run) {
                    if index != run.startIndex { rows.writeString("\\n") }
                    Self.writeEscaped(try record.record.wireJSON(), to: &rows)
                }
                rows.writeInteger(UInt8(ascii: "\n"))
                start += run.count
            }
        }
        try await connection.copyFrom(
            table: "decision_records",
            columns: [
                "device_key", "project_id", "device_id", "evaluated_at", "first_evaluated_at", "record_count", "fix_partition",
                "fix_offset", "records",
            ],
            logger: logger
        ) { writer in
            try await writer.write(rows)
        }
        try await connection.perform(
            """
            DELETE FROM decision_records d
             USING (SELECT DISTINCT unnest(\(devices.map(\.recordKey))::int8[]) AS device_key) w, erasures e
             WHERE e.device_key = w.device_key AND e.state = 'erased' AND d.device_key = e.device_key
               AND d.fix_partition = e.partition AND d.fix_offset < e.marker_offset
            """, logger: logger)
    }

    /// A text column of COPY's text format, then its tab.
    static func writeText(_ text: String, to rows: inout ByteBuffer) {
        writeEscaped(text.utf8, to: &rows)
        rows.writeInteger(UInt8(ascii: "\t"))
    }

    /// Bytes as COPY's text format reads them back: backslash, tab and line breaks escaped.
    /// (Written JSON has no raw tab or line break, and a backslash only in an escaped string:
    /// most records go in whole.)
    static func writeEscaped(_ bytes: some Collection<UInt8>, to rows: inout ByteBuffer) {
        let special: (UInt8) -> Bool = { byte in
            byte == UInt8(ascii: "\\") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r")
        }
        guard bytes.contains(where: special) else {
            rows.writeBytes(bytes)
            return
        }
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "\\"): rows.writeString("\\\\")
            case UInt8(ascii: "\t"): rows.writeString("\\t")
            case UInt8(ascii: "\n"): rows.writeString("\\n")
            case UInt8(ascii: "\r"): rows.writeString("\\r")
            default: rows.writeInteger(byte)
            }
        }
    }

    /// A device's records, newest first, `limit` of them from `cursor` (a page's `nextCursor`).
    ///
    /// A cursor is a row's id times 2¹⁶ plus how many of that row's records (its oldest) are
    /// still to come; rows hold far fewer than 2¹⁶.
    package func page(
        projectId: String, deviceId: String, before cursor: Int64?, limit: Int, on client: PostgresClient
    ) async throws -> DecisionPage {
        let (cursorRow, cursorRemaining) = cursor.map { ($0 >> 16, Int($0 & 0xFFFF)) } ?? (Int64.max >> 16, Int.max)
        // Every row holds at least one record: limit + 2 rows give the page and tell whether more follow.
        let rows = try await client.query(
            """
            SELECT id, records FROM decision_records
             WHERE device_key = \(DeviceKey(projectId: projectId, deviceId: deviceId).recordKey)
               AND project_id = \(projectId) AND device_id = \(deviceId) AND id <= \(cursorRow)
             ORDER BY id DESC
             LIMIT \(limit + 2)
            """, logger: logger)
        var records: [DecisionRecord] = []
        var nextCursor: Int64?
        let decoder = WireJSON.decoder()
        rowsLoop: for try await (id, text) in rows.decode((Int64, String).self) {
            let lines = text.split(separator: "\n", omittingEmptySubsequences: true)
            let available = id == cursorRow ? min(cursorRemaining, lines.count) : lines.count
            var position = available
            while position > 0 {
                if records.count == limit {
                    nextCursor = id << 16 | Int64(position)
                    break rowsLoop
                }
                position -= 1
                records.append(try decoder.decode(DecisionRecord.self, from: Data(lines[position].utf8)))
            }
        }
        return DecisionPage(records: records, nextCursor: nextCursor)
    }

    /// Deletes records evaluated before `now - retention` that are not among their device's
    /// newest `keep`, `batchSize` rows per statement; returns how many records it deleted.
    /// A row goes whole: once its newer rows hold `keep` records (its nearest `keep` newer
    /// rows suffice to tell, each holding one or more).
    package func purge(
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
                       AND (SELECT coalesce(sum(newer.record_count), 0) FROM (
                                SELECT x.record_count FROM decision_records x
                                 WHERE x.device_key = d.device_key AND x.project_id = d.project_id
                                   AND x.device_id = d.device_id AND x.id > d.id
                                 ORDER BY x.id LIMIT \(keep)) newer) >= \(keep)
                     LIMIT \(batchSize)
                )
                DELETE FROM decision_records d USING doomed
                 WHERE d.device_key = doomed.device_key AND d.id = doomed.id
                RETURNING d.record_count
                """, logger: logger)
            var deletedRows = 0
            for try await count in rows.decode(Int.self) {
                deletedRows += 1
                purged += count
            }
            if deletedRows < batchSize {
                try await client.perform(
                    "DELETE FROM device_erasures WHERE erased_at < \(now.addingTimeInterval(-7200))", logger: logger)
                return purged
            }
            try await Task.sleep(for: pause)
        }
    }
}
