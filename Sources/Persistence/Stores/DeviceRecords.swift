import Foundation
import Logging
import PostgresNIO
import Shared

/// What is kept about one device, for those who ask why it did or did not check in: its
/// state as the evaluator last wrote it and its decision records
/// (docs/evaluation-rules.md#decision-records).
package struct DeviceRecords: Sendable {
    package let database: Database
    let logger: Logger
    let decisions: DecisionStore

    package init(database: Database, logger: Logger) {
        self.database = database
        self.logger = logger
        self.decisions = DecisionStore(logger: logger)
    }

    /// The project's event log, which the device's events are part of.
    package var eventLog: EventLogStore { EventLogStore(database: database, logger: logger) }

    /// The device's stored state row; nil when the device has none (never seen, or purged).
    package struct StateRow: Sendable {
        package var state: [UInt8]
        package var staleAt: Date?
        package var lastFixAt: Date?
    }

    package func state(projectId: String, deviceId: String) async throws -> StateRow? {
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
    package func decisions(projectId: String, deviceId: String, before cursor: Int64?, limit: Int) async throws -> DecisionPage {
        try await decisions.page(projectId: projectId, deviceId: deviceId, before: cursor, limit: limit, on: database.client)
    }

    /// The newest entry about each of `zoneIds` among the device's last `scanning` records.
    package func latestEntries(
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
