import Foundation
import Hummingbird
import Logging
import Persistence
import PostgresNIO
import Shared
import Testing

/// Webhooks reach the partner in each device's `sequence` order and follow Standard
/// Webhooks' failure rules, through the whole pipeline and a real receiver over HTTP.
@Suite(.serialized) struct DeliveryOrderTests {
    /// Three circles 1 km apart along a parallel, each with check-out.
    static let threeZones = ZonesDocument(
        zones: ["a", "b", "c"].enumerated().map { index, id in
            ZoneDefinition(
                id: id, name: "Zone \(id)", checkOutEnabled: true,
                fences: [
                    FenceDefinition(
                        id: "fence-\(id)", geometry: .point(position(metresEast: Double(index) * 1000)), radius: TestTrip.radius)
                ])
        })

    static func position(metresEast: Double) -> Position {
        let metresPerDegreeLon = 111_320 * cos(TestTrip.centre.lat * .pi / 180)
        return Position(lon: TestTrip.centre.lon + metresEast / metresPerDegreeLon, lat: TestTrip.centre.lat)
    }

    /// A walk east through the three zones: in and out of a, then b, then c.
    static func walk(projectId: String, deviceId: String) throws -> Data {
        let start = Date().addingTimeInterval(-900)
        let metres: [Double] = [-400, 0, 400, 600, 1000, 1400, 1600, 2000, 2400]
        let fixes: [[String: Any]] = metres.enumerated().map { index, east in
            let position = position(metresEast: east)
            return [
                "projectId": projectId, "deviceId": deviceId, "fixId": "\(deviceId)-\(index)",
                "timestamp": RFC3339.format(start.addingTimeInterval(Double(index) * 30)), "lat": position.lat,
                "lon": position.lon, "accuracy": 5,
            ]
        }
        return try JSONSerialization.data(withJSONObject: ["fixes": fixes])
    }

    @Test func aDeviceVisitingThreeZonesReachesThePartnerInSequenceDespiteA500() async throws {
        var configured = PipelineHarness()
        configured.zones = Self.threeZones
        configured.databaseURL = try await freshDatabaseURL(logger: configured.logger)
        // The first check-in fails once; the device's later events must not overtake it.
        configured.respond = { payload, arrival in
            payload.data.sequence == 1 && arrival == 1 ? Response(status: .internalServerError) : nil
        }
        let harness = configured
        try await harness.run { ingestPort, received in
            let deviceId = "walker-" + UUID().uuidString.prefix(8).lowercased()
            let base = "http://127.0.0.1:\(ingestPort)/v1"
            let answer = try await post(
                try Self.walk(projectId: harness.projectId, deviceId: deviceId), to: "\(base)/fixes", key: harness.deviceKey)
            #expect(answer.status == 202)
            try await received.wait(timeout: .seconds(90)) { $0.filter { $0.data.deviceId == deviceId }.count >= 6 }

            let mine = await received.payloads.filter { $0.data.deviceId == deviceId }
            #expect(mine.map(\.data.sequence) == [1, 2, 3, 4, 5, 6])
            #expect(
                mine.map { "\($0.data.type.rawValue) \($0.data.zone.id)" } == [
                    "checkin a", "checkout a", "checkin b", "checkout b", "checkin c", "checkout c",
                ])

            // The attempt log of the check-in that failed once.
            let listed = try await post(Data(), to: "\(base)/deliveries?limit=100", key: harness.managementKey, method: .GET)
            let deliveries = try WireJSON.decoder().decode(ListedDeliveries.self, from: Data(listed.body.utf8)).deliveries
            let first = try #require(deliveries.first { $0.deviceId == deviceId && $0.sequence == 1 })
            let shown = try await post(Data(), to: "\(base)/deliveries/\(DeliveryIdentifier.text(first.id))", key: harness.managementKey, method: .GET)
            #expect(shown.status == 200)
            let detail = try WireJSON.decoder().decode(DeliveryDetail.self, from: Data(shown.body.utf8))
            #expect(detail.delivery.status == .delivered)
            #expect(detail.attemptLog.map(\.statusCode) == [500, 204])
            #expect(detail.attemptLog.first?.error == "HTTP 500")

            // Another project's management key does not see it.
            let otherKey = "ck_management_other_\(harness.suffix)"
            try await Database.withTemporaryClient(configuration: try harness.databaseConfiguration(), logger: harness.logger) {
                database in
                let projects = ProjectStore(database: database, logger: harness.logger)
                try await projects.createProject(id: "other-\(harness.suffix)", name: "Other")
                try await projects.addKey(otherKey, projectId: "other-\(harness.suffix)", kind: .management)
            }
            let hidden = try await post(Data(), to: "\(base)/deliveries/\(DeliveryIdentifier.text(first.id))", key: otherKey, method: .GET)
            #expect(hidden.status == 404)
            #expect(hidden.contentType == "application/problem+json")
        }
    }

    /// 3xx is a failure and is not followed; 429 waits as Retry-After says; 410 disables the
    /// endpoint, whose events wait until it is enabled again and then go in order.
    @Test func redirectsRetryAfterAndGoneFollowStandardWebhooks() async throws {
        var configured = PipelineHarness()
        configured.databaseURL = try await freshDatabaseURL(logger: configured.logger)
        configured.respond = { payload, arrival in
            guard payload.data.type == .checkin else { return nil }
            switch arrival {
            case 1: return Response(status: .temporaryRedirect, headers: [.location: "/elsewhere"])
            case 2: return Response(status: .tooManyRequests, headers: [.retryAfter: "2"])
            case 3: return Response(status: .gone)
            default: return nil
            }
        }
        let harness = configured
        try await harness.run { ingestPort, received in
            let trip = TestTrip(projectId: harness.projectId)
            let base = "http://127.0.0.1:\(ingestPort)/v1"
            #expect(try await post(try trip.batch(0..<9), to: "\(base)/fixes", key: harness.deviceKey).status == 202)

            let deadline = ContinuousClock.now + .seconds(60)
            while await received.requests.filter({ $0.payload.data.deviceId == trip.deviceId }).count < 3 {
                guard ContinuousClock.now < deadline else { throw TestFailure("the check-in was not attempted three times") }
                try await Task.sleep(for: .milliseconds(100))
            }
            let logger = harness.logger
            let endpointEnabled: @Sendable () async throws -> Bool = {
                try await Database.withTemporaryClient(configuration: try harness.databaseConfiguration(), logger: logger) {
                    database in
                    try await WebhookStore(database: database, logger: logger, sealer: harness.sealer).endpoints(
                        projectId: harness.projectId
                    )
                    .allSatisfy(\.enabled)
                }
            }
            while try await endpointEnabled() {
                guard ContinuousClock.now < deadline else { throw TestFailure("the endpoint was not disabled after 410") }
                try await Task.sleep(for: .milliseconds(100))
            }
            // Disabled: neither the check-in's retry (back-off 0.1-0.2 s) nor the check-out is sent.
            try await Task.sleep(for: .seconds(1.5))
            #expect(await received.requests.filter { $0.payload.data.deviceId == trip.deviceId }.count == 3)

            try await Database.withTemporaryClient(configuration: try harness.databaseConfiguration(), logger: logger) {
                database in
                let webhooks = WebhookStore(database: database, logger: logger, sealer: harness.sealer)
                for endpoint in try await webhooks.endpoints(projectId: harness.projectId) {
                    _ = try await webhooks.enableEndpoint(id: endpoint.id, projectId: harness.projectId)
                }
            }
            try await received.wait(timeout: .seconds(60)) { trip.isComplete($0) }

            let requests = await received.requests.filter { $0.payload.data.deviceId == trip.deviceId }
            let checkIns = requests.filter { $0.payload.data.type == .checkin }
            #expect(checkIns.count == 4)
            // Retry-After: 2 was honoured, though the back-off alone would have been 0.2 s at most.
            #expect(checkIns[2].at - checkIns[1].at >= .milliseconds(1900))
            // The redirect was an answer, not followed.
            #expect(await received.redirectedArrivals == 0)
            let accepted = await received.payloads.filter { $0.data.deviceId == trip.deviceId }
            #expect(accepted.map(\.data.type) == [.checkin, .checkout])

            let listed = try await post(Data(), to: "\(base)/deliveries", key: harness.managementKey, method: .GET)
            let deliveries = try WireJSON.decoder().decode(ListedDeliveries.self, from: Data(listed.body.utf8)).deliveries
            let checkIn = try #require(deliveries.first { $0.deviceId == trip.deviceId && $0.eventType == "checkin" })
            let shown = try await post(Data(), to: "\(base)/deliveries/\(DeliveryIdentifier.text(checkIn.id))", key: harness.managementKey, method: .GET)
            let detail = try WireJSON.decoder().decode(DeliveryDetail.self, from: Data(shown.body.utf8))
            #expect(detail.attemptLog.map(\.statusCode) == [307, 429, 410, 204])
        }
    }

    /// Failed deliveries replayed together go out in sequence order, whatever order they are named in.
    @Test func replayingFailedDeliveriesSendsThemInSequenceOrder() async throws {
        var configured = PipelineHarness()
        configured.databaseURL = try await freshDatabaseURL(logger: configured.logger)
        configured.configureNotifier = { $0.maximumAttempts = 1 }
        let partnerIsDown = PartnerSwitch()
        configured.respond = { _, _ in await partnerIsDown.isOn ? Response(status: .internalServerError) : nil }
        let harness = configured
        try await harness.run { ingestPort, received in
            let trip = TestTrip(projectId: harness.projectId)
            let base = "http://127.0.0.1:\(ingestPort)/v1"
            #expect(try await post(try trip.batch(0..<9), to: "\(base)/fixes", key: harness.deviceKey).status == 202)

            var failed: [DeliveryRecord] = []
            let deadline = ContinuousClock.now + .seconds(60)
            while failed.count < 2 {
                guard ContinuousClock.now < deadline else { throw TestFailure("the deliveries did not fail") }
                try await Task.sleep(for: .milliseconds(200))
                let listed = try await post(
                    Data(), to: "\(base)/deliveries?status=failed", key: harness.managementKey, method: .GET)
                failed = try WireJSON.decoder().decode(ListedDeliveries.self, from: Data(listed.body.utf8)).deliveries
            }
            #expect(await received.payloads.isEmpty)
            await partnerIsDown.set(false)
            // Named newest first, as the list shows them.
            let ids = failed.map { "\"\(DeliveryIdentifier.text($0.id))\"" }.joined(separator: ",")
            let replayed = try await post(Data(#"{"ids": [\#(ids)]}"#.utf8), to: "\(base)/deliveries/replay", key: harness.managementKey)
            #expect(replayed.status == 202)
            #expect(replayed.body == #"{"disabledEndpoints":[],"replayed":2}"#)
            try await received.wait(timeout: .seconds(60)) { trip.isComplete($0) }
            #expect(await received.payloads.map(\.data.sequence) == [1, 2])
        }
    }
}

/// A flag a test flips while a receiver reads it.
actor PartnerSwitch {
    private(set) var isOn = true
    func set(_ value: Bool) { isOn = value }
}

/// A page of `GET /v1/deliveries`, as far as these tests read it.
private struct ListedDeliveries: Decodable {
    var deliveries: [DeliveryRecord]
}
