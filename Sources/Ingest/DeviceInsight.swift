import Foundation
import Geofence
import Logging
import Metrics
import Persistence
import Shared

/// Answers "why did this device (not) check in?" from what the evaluator kept: the device
/// view, its decision records and the event log (docs/evaluation-rules.md#reading-decision-records),
/// for the management API and the CLI alike.
package struct DeviceInsight: Sendable {
    let records: DeviceRecords
    let zones: ZoneStore

    package init(records: DeviceRecords, zones: ZoneStore) {
        self.records = records
        self.zones = zones
    }

    /// What the device is now; nil when nothing is kept about it (never seen, or erased).
    package func view(projectId: String, deviceId: String, now: Date = Date()) async throws -> DeviceView? {
        guard let row = try await records.state(projectId: projectId, deviceId: deviceId) else { return nil }
        let state = try DeviceState(storedBytes: row.state)
        let retrigger = try await zones.minimumRetriggerTimes(projectId: projectId, zoneIds: state.rememberedZoneIds)
        var view = state.view(
            projectId: projectId, deviceId: deviceId, staleCheckOutAt: row.staleAt, now: now,
            minimumRetriggerTime: { retrigger[$0] })
        let reasons = try await records.latestEntries(
            projectId: projectId, deviceId: deviceId, zoneIds: Set(view.insideWithoutCheckIn.map(\.zoneId)))
        for index in view.insideWithoutCheckIn.indices {
            guard let entry = reasons[view.insideWithoutCheckIn[index].zoneId], entry.reason != nil else { continue }
            view.insideWithoutCheckIn[index].reason = entry.reason
            view.insideWithoutCheckIn[index].detail = entry.detail
        }
        return view
    }

    /// A page of the project's event log, newest first, each event with its deliveries.
    package func events(projectId: String, filter: EventFilter, cursor: Int64?, limit: Int) async throws -> EventPage {
        try await records.eventLog.page(projectId: projectId, filter: filter, before: cursor, limit: limit)
    }

    /// A page of the device's decision records, newest first.
    package func decisions(projectId: String, deviceId: String, cursor: Int64?, limit: Int) async throws -> DecisionPage {
        try await records.decisions(projectId: projectId, deviceId: deviceId, before: cursor, limit: limit)
    }
}
