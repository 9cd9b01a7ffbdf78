import Foundation
import Persistence
import PostgresNIO
import Shared
import Testing

/// What the evaluator and the notifier's intake write reflects the latest data: a
/// device's last fix survives batches that evaluate nothing, and an endpoint gets the
/// events that come after it was added.
@Suite(.serialized) struct IntakeFreshnessTests {
    /// The first row of one query on the harness's database, decoded as `Row`.
    static func first<each Column: PostgresDecodable & Sendable>(
        _ row: (repeat each Column).Type, _ query: PostgresQuery, harness: PipelineHarness
    ) async throws -> (repeat each Column)? {
        try await Database.withTemporaryClient(configuration: try harness.databaseConfiguration(), logger: harness.logger) {
            database in
            for try await value in try await database.client.query(query, logger: harness.logger).decode(row) {
                return value
            }
            return nil
        }
    }

    /// Polls `condition` every 100 ms until it holds, or fails after `timeout`.
    static func eventually(
        _ what: String, timeout: Duration = .seconds(60), _ condition: @Sendable () async throws -> Bool
    ) async throws {
        let deadline = ContinuousClock.now + timeout
        while try await !condition() {
            guard ContinuousClock.now < deadline else { throw TestFailure("timed out waiting until \(what)") }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    @Test func aBatchOfLateFixesKeepsTheDevicesLastFixTime() async throws {
        let harness = PipelineHarness()
        try await harness.run { ingestPort, _ in
            let trip = TestTrip(projectId: harness.projectId)
            let url = "http://127.0.0.1:\(ingestPort)/v1/fixes"
            let (projectId, deviceId) = (trip.projectId, trip.deviceId)
            #expect(try await post(try trip.batch(0..<3), to: url, key: harness.deviceKey).status == 202)
            let lastFix = trip.start.addingTimeInterval(60)
            @Sendable func stored() async throws -> (Date?, Date)? {
                try await Self.first(
                    (Date?, Date).self,
                    "SELECT last_fix_at, updated_at FROM device_states WHERE project_id = \(projectId) AND device_id = \(deviceId)",
                    harness: harness)
            }
            try await Self.eventually("the three fixes are evaluated") {
                try await stored()?.0.map { abs($0.timeIntervalSince(lastFix)) < 0.001 } == true
            }
            let before = try #require(try await stored())

            let fixesTopic = harness.topics.fixes
            @Sendable func committed() async throws -> Int64 {
                try await Self.first(
                    Int64.self,
                    "SELECT COALESCE(sum(next_offset), 0)::int8 FROM consumer_offsets WHERE topic = \(fixesTopic)",
                    harness: harness) ?? 0
            }
            let committedBefore = try await committed()

            // A fix from before the last one, under a new id: late, not evaluated.
            var late = trip.fix(1)
            late["fixId"] = "\(deviceId)-late"
            let body = try JSONSerialization.data(withJSONObject: ["fixes": [late]])
            #expect(try await post(body, to: url, key: harness.deviceKey).status == 202)
            try await Self.eventually("the late fix's batch is committed") { try await committed() > committedBefore }
            let after = try #require(try await stored())
            #expect(after.0.map { abs($0.timeIntervalSince(lastFix)) < 0.001 } == true)
            // The state did not change, so it was not written again.
            #expect(after.1 == before.1)
        }
    }

    @Test func anEndpointAddedJustNowGetsTheNextEvent() async throws {
        let harness = PipelineHarness()
        try await harness.run { ingestPort, _ in
            let trip = TestTrip(projectId: harness.projectId)
            let url = "http://127.0.0.1:\(ingestPort)/v1/fixes"
            let deviceId = trip.deviceId
            @Sendable func queued(_ type: String, endpointId: String? = nil) async throws -> Int64 {
                try await Self.first(
                    Int64.self,
                    """
                    SELECT count(*) FROM deliveries
                     WHERE device_id = \(deviceId) AND event_type = \(type) AND (\(endpointId ?? "") = '' OR endpoint_id = \(endpointId ?? ""))
                    """, harness: harness) ?? 0
            }
            // The check-in is queued for the endpoint the harness added: the intake has just read the endpoints.
            #expect(try await post(try trip.batch(0..<4), to: url, key: harness.deviceKey).status == 202)
            try await Self.eventually("the check-in is queued") { try await queued("checkin") == 1 }

            let added = try await harness.addEndpoint(url: "http://127.0.0.1:9/second")
            #expect(try await post(try trip.batch(4..<9), to: url, key: harness.deviceKey).status == 202)
            try await Self.eventually("the check-out is queued") { try await queued("checkout") >= 1 }
            #expect(try await queued("checkout", endpointId: added.id) == 1)
            #expect(try await queued("checkin", endpointId: added.id) == 0)
        }
    }
}
