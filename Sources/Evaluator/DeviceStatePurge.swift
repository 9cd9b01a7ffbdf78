import Foundation
import Geofence
import Logging
import Persistence
import Shared

/// Which device states retention deletes: those of devices not heard from for
/// `retention`, so that devices that are gone (apps uninstalled, ids rotated) do not
/// pile up. A device still checked in somewhere (inside a zone, or with a check-in
/// that will be closed) keeps its state ten times as long: deleting it would make its
/// next fix there a new check-in. A device that comes back after its state was deleted
/// starts afresh: outside every zone, its events numbered from 1 again.
package struct DeviceStatePurge: Sendable {
    /// How many times the retention a checked-in device is kept.
    package static let checkedInFactor = 10.0

    let database: Database
    let retention: Duration
    let batchSize: Int
    let pause: Duration
    let states: DeviceStateStore

    package init(
        database: Database, retention: Duration, batchSize: Int = 1000, pause: Duration = .milliseconds(100),
        logger: Logger
    ) {
        self.database = database
        self.retention = retention
        self.batchSize = batchSize
        self.pause = pause
        self.states = DeviceStateStore(logger: logger)
    }

    /// One walk through every state, `batchSize` devices per statement; returns how many it deleted.
    package func purge(now: Date) async throws -> Int {
        let cutoff = now.addingTimeInterval(-retention.seconds)
        let checkedInCutoff = now.addingTimeInterval(-retention.seconds * Self.checkedInFactor)
        var cursor: DeviceKey?
        var purged = 0
        repeat {
            let step = try await database.client.withConnection { [cursor] connection in
                try await states.scanSilent(after: cursor, cutoff: cutoff, limit: batchSize, on: connection)
            }
            var idle: [DeviceKey] = []
            var checkedIn: [DeviceKey] = []
            for (key, stored) in step.candidates {
                // A state that no longer decodes would be started afresh anyway.
                let state = try? DeviceState(storedBytes: stored)
                if let state, !state.openCheckInZoneIds.isEmpty || !state.presentZoneIds.isEmpty {
                    checkedIn.append(key)
                } else {
                    idle.append(key)
                }
            }
            purged += try await database.client.withConnection { [idle, checkedIn] connection in
                try await states.delete(idle, writtenBefore: cutoff, on: connection)
                    + states.delete(checkedIn, writtenBefore: checkedInCutoff, on: connection)
            }
            cursor = step.last
            if cursor != nil { try await Task.sleep(for: pause) }
        } while cursor != nil
        return purged
    }
}
