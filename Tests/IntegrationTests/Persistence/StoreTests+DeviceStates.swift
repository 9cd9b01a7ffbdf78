import Foundation
import Geofence
import Logging
import Persistence
import PostgresNIO
import Shared
import Synchronization
import Testing

/// The device states, offsets and stale claims the evaluator keeps in Postgres.
extension StoreTests {
    /// A state stored as JSON before states were stored in binary reads as it was; the
    /// next write stores it in binary and clears the JSON.
    @Test func deviceStatesReadTheirJSONFormAndAreRewrittenInBinary() async throws {
        let logger = logger
        let key = DeviceKey(projectId: "state-" + UUID().uuidString, deviceId: "d")
        let json = #"{"t": 1000, "n": 3, "z": [{"id": "zone-cafe", "in": true, "o": {"id": "check-in", "t": 1000}}]}"#
        let expected = try WireJSON.decoder().decode(DeviceState.self, from: Data(json.utf8))
        let (legacy, rewritten, columns) = try await withDatabase { database in
            let states = DeviceStateStore(logger: logger)
            try await database.client.query(
                "INSERT INTO device_states (project_id, device_id, state) VALUES (\(key.projectId), \(key.deviceId), \(json)::jsonb)",
                logger: logger)
            return try await database.withTransaction { connection in
                let legacy = try DeviceState(storedBytes: try #require(try await states.lockStates([key], on: connection)[key]))
                try await states.save(
                    [StoredDeviceState(key: key, state: legacy.binaryEncoded(), lastFixAt: nil, staleAt: nil)], on: connection)
                let rewritten = try DeviceState(storedBytes: try #require(try await states.lockStates([key], on: connection)[key]))
                let rows = try await connection.query(
                    """
                    SELECT state IS NULL, octet_length(state_binary) FROM device_states
                     WHERE project_id = \(key.projectId) AND device_id = \(key.deviceId)
                    """, logger: logger)
                var columns: (jsonCleared: Bool, binaryBytes: Int)?
                for try await (cleared, bytes) in rows.decode((Bool, Int?).self) { columns = (cleared, bytes ?? 0) }
                return (legacy, rewritten, columns)
            }
        }
        #expect(legacy == expected)
        #expect(legacy.lastSequence == 3)
        #expect(legacy.openCheckInZoneIds == ["zone-cafe"])
        #expect(rewritten == expected)
        #expect(columns?.jsonCleared == true)
        #expect((columns?.binaryBytes ?? 0) > 0 && (columns?.binaryBytes ?? 0) < json.utf8.count)
    }

    @Test func offsetsNeverMoveBackwards() async throws {
        let logger = logger
        let group = "group-" + UUID().uuidString
        let offsets = try await withDatabase { database in
            let store = OffsetStore(database: database, logger: logger)
            try await database.withTransaction { connection in
                try await store.save(group: group, offsets: [("t", 0, 10), ("t", 1, 5)], on: connection)
            }
            try await database.withTransaction { connection in
                try await store.save(group: group, offsets: [("t", 0, 7), ("t", 1, 6)], on: connection)
            }
            return try await store.nextOffsets(group: group, topic: "t", partitions: [0, 1, 2])
        }
        #expect(offsets == [0: 10, 1: 6])
    }

    /// A device is due for a stale check-out only on a partition the caller owns and once
    /// that partition has been consumed past its deadline; a device whose partition is not
    /// known waits until every partition has been.
    @Test func staleDevicesAreClaimedOnceTheirPartitionIsConsumedPastTheirDeadline() async throws {
        let logger = logger
        let (group, topic, project) = ("group-" + UUID().uuidString, "fixes-" + UUID().uuidString, "project-" + UUID().uuidString)
        let now = Date()
        let claimed = try await withDatabase { database in
            let offsets = OffsetStore(database: database, logger: logger)
            let states = DeviceStateStore(logger: logger)
            func state(_ device: String, partition: Int32?) -> StoredDeviceState {
                StoredDeviceState(
                    key: DeviceKey(projectId: project, deviceId: device), state: Array("{}".utf8), lastFixAt: nil,
                    staleAt: now.addingTimeInterval(-60), partition: partition)
            }
            func claim() async throws -> [String] {
                try await database.withTransaction { connection in
                    try await states.claimStale(dueBy: now, group: group, topic: topic, partitions: [0, 1], limit: 100, on: connection)
                        .filter { $0.key.projectId == project }.map(\.key.deviceId).sorted()
                }
            }
            try await database.withTransaction { connection in
                try await states.save(
                    [
                        state("behind-a-backlog", partition: 0), state("caught-up", partition: 1),
                        state("someone-elses", partition: 2), state("partition-unknown", partition: nil),
                    ], on: connection)
                try await offsets.save(
                    group: group, offsets: [(topic, 0, 10), (topic, 1, 10), (topic, 2, 10)],
                    consumedUntil: [
                        OwnedPartition(topic: topic, partition: 0): now.addingTimeInterval(-120),
                        OwnedPartition(topic: topic, partition: 1): now.addingTimeInterval(-10),
                        OwnedPartition(topic: topic, partition: 2): now,
                    ], on: connection)
            }
            let first = try await claim()
            try await database.withTransaction { connection in
                try await offsets.markConsumed(group: group, topic: topic, partitions: [0], until: now, on: connection)
            }
            return (first, try await claim())
        }
        #expect(claimed.0 == ["caught-up"])
        #expect(claimed.1 == ["behind-a-backlog", "caught-up", "partition-unknown"])
    }

    /// While a device stays checked in its deadline moves with every fix; writes whose
    /// deadline stays in one minute change no indexed column, so Postgres keeps them in the
    /// row's page (heap-only updates) instead of adding index entries for each.
    @Test func aCheckedInDevicesWritesWithinAMinuteAreHeapOnly() async throws {
        let logger = logger
        let project = "project-" + UUID().uuidString
        let minute = (Date().timeIntervalSince1970 / 60).rounded(.down) * 60
        let counts = try await withDatabase { database in
            let states = DeviceStateStore(logger: logger)
            // Five updates in one transaction (whose versions cannot be pruned before it ends):
            // they fit in the room the table's fill factor leaves in the page of a new row.
            return try await database.withTransaction { connection in
                for second in 1...6 {
                    let deadline = Date(timeIntervalSince1970: minute + Double(second))
                    try await states.save(
                        [
                            StoredDeviceState(
                                key: DeviceKey(projectId: project, deviceId: "walker"), state: [UInt8(second)],
                                lastFixAt: deadline.addingTimeInterval(-7200), staleAt: deadline, partition: 0)
                        ], on: connection)
                }
                let rows = try await connection.query(
                    """
                    SELECT pg_stat_get_xact_tuples_updated('device_states'::regclass),
                           pg_stat_get_xact_tuples_hot_updated('device_states'::regclass)
                    """, logger: logger)
                for try await (updated, heapOnly) in rows.decode((Int, Int).self) { return (updated, heapOnly) }
                return (-1, -1)
            }
        }
        #expect(counts.0 == 5)
        #expect(counts.1 == 5)
    }

    /// The sweep finds devices by the minute of their deadline, and still takes only those
    /// whose deadline has passed: one due later in the same minute waits.
    @Test func aDeadlineLaterInTheSameMinuteIsNotYetDue() async throws {
        let logger = logger
        let (group, topic, project) = ("group-" + UUID().uuidString, "fixes-" + UUID().uuidString, "project-" + UUID().uuidString)
        let minute = (Date().timeIntervalSince1970 / 60).rounded(.down) * 60 - 120
        let now = Date(timeIntervalSince1970: minute + 30)
        let claimed = try await withDatabase { database in
            let offsets = OffsetStore(database: database, logger: logger)
            let states = DeviceStateStore(logger: logger)
            func state(_ device: String, dueAfter seconds: Double) -> StoredDeviceState {
                StoredDeviceState(
                    key: DeviceKey(projectId: project, deviceId: device), state: Array("{}".utf8), lastFixAt: nil,
                    staleAt: Date(timeIntervalSince1970: minute + seconds), partition: 0)
            }
            try await database.withTransaction { connection in
                try await states.save(
                    [
                        state("due-earlier-this-minute", dueAfter: 10), state("due-later-this-minute", dueAfter: 50),
                        state("due-the-minute-before", dueAfter: -20), state("due-next-minute", dueAfter: 70),
                    ], on: connection)
                try await offsets.save(
                    group: group, offsets: [(topic, 0, 10)], consumedUntil: [OwnedPartition(topic: topic, partition: 0): now],
                    on: connection)
            }
            return try await database.withTransaction { connection in
                try await states.claimStale(dueBy: now, group: group, topic: topic, partitions: [0], limit: 100, on: connection)
                    .filter { $0.key.projectId == project }.map(\.key.deviceId).sorted()
            }
        }
        #expect(claimed == ["due-earlier-this-minute", "due-the-minute-before"])
    }
}
