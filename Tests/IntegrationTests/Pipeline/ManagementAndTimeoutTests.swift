import Foundation
import Geofence
import Shared
import Testing

@Suite(.serialized) struct ManagementAndTimeoutTests {
    /// A device that goes silent inside a zone is checked out by the wall-clock sweep,
    /// as an app force-quit by its user will never report its exit.
    @Test func silentDeviceIsCheckedOutWithReasonTimeout() async throws {
        let databaseURL = try await PipelineHarness.freshDatabaseURL()
        let harness = {
            var harness = PipelineHarness()
            // A database of its own: another test's evaluator (with the usual two hours) would
            // sweep this device's state too, and set its deadline by its own staleAfter.
            harness.databaseURL = databaseURL
            harness.engine = EngineConfiguration(staleAfter: 5)
            harness.staleSweepInterval = .milliseconds(500)
            return harness
        }()
        try await harness.run { ingestPort, received in
            let trip = TestTrip(projectId: harness.projectId, start: Date().addingTimeInterval(-150))
            // Into the zone and no further: the last fix is inside.
            let answer = try await post(try trip.batch(0..<5), to: "http://127.0.0.1:\(ingestPort)/v1/fixes", key: harness.deviceKey)
            #expect(answer.status == 202)
            try await received.wait(timeout: .seconds(90)) { trip.isComplete($0) }
            let mine = await received.payloads.filter { $0.data.deviceId == trip.deviceId }
            let checkIn = try #require(mine.first { $0.data.type == .checkin })
            let checkOut = try #require(mine.first { $0.data.type == .checkout })
            #expect(checkOut.data.reason == .timeout)
            #expect(checkOut.data.checkInId == checkIn.data.checkInId)
            #expect(mine.map(\.data.type) == [.checkin, .checkout])
        }
    }

    @Test func zonesAndEndpointsAreManagedOverHTTPWithTheManagementKey() async throws {
        let harness = PipelineHarness()
        try await harness.run { ingestPort, _ in
            let base = "http://127.0.0.1:\(ingestPort)/v1"
            let invalid =
                #"{"zones":[{"id":"z","name":"Z","fences":[{"id":"f","geometry":{"type":"Point","coordinates":[0,0]},"radius":-5}]}]}"#
            let refused = try await post(Data(invalid.utf8), to: "\(base)/zones", key: harness.managementKey, method: .PUT)
            #expect(refused.status == 400)
            #expect(refused.contentType == "application/problem+json")
            #expect(refused.body.contains("zones[z].fences[f]"))

            let wrongKey = try await post(Data(invalid.utf8), to: "\(base)/zones", key: harness.deviceKey, method: .PUT)
            #expect(wrongKey.status == 401)

            // Zones under 500 m apart are stored, with a warning naming both fences.
            var crowded = TestTrip.zones
            var neighbour = crowded.zones[0]
            neighbour.id = "zone-bakery"
            neighbour.fences[0].id = "fence-bakery"
            neighbour.fences[0].geometry = .point(Position(lon: TestTrip.centre.lon + 0.003, lat: TestTrip.centre.lat))
            crowded.zones.append(neighbour)
            let warned = try await post(
                try WireJSON.encoder().encode(crowded), to: "\(base)/zones", key: harness.managementKey, method: .PUT)
            #expect(warned.status == 200)
            #expect(warned.body.contains(#""warningCount":1"#))
            #expect(warned.body.contains(#""fenceId":"fence-cafe""#) && warned.body.contains(#""otherFenceId":"fence-bakery""#))

            let document = try WireJSON.encoder().encode(TestTrip.zones)
            let replaced = try await post(document, to: "\(base)/zones", key: harness.managementKey, method: .PUT)
            #expect(replaced.status == 200)
            #expect(replaced.body.contains(#""warningCount":0"#))
            let exported = try await post(Data(), to: "\(base)/zones", key: harness.managementKey, method: .GET)
            #expect(try WireJSON.decoder().decode(ZonesDocument.self, from: Data(exported.body.utf8)) == TestTrip.zones)

            let endpoint = try await post(
                Data(#"{"url":"http://127.0.0.1:9/hook"}"#.utf8), to: "\(base)/webhooks", key: harness.managementKey)
            #expect(endpoint.status == 201)
            #expect(endpoint.body.contains("whsec_"))
            let badEndpoint = try await post(Data(#"{"url":"ftp://x"}"#.utf8), to: "\(base)/webhooks", key: harness.managementKey)
            #expect(badEndpoint.status == 400)
            let listed = try await post(Data(), to: "\(base)/webhooks", key: harness.managementKey, method: .GET)
            #expect(listed.body.contains("http://127.0.0.1:9/hook"))
            #expect(!listed.body.contains("whsec_"))

            let deliveries = try await post(Data(), to: "\(base)/deliveries?status=bogus", key: harness.managementKey, method: .GET)
            #expect(deliveries.status == 400)
            let missing = try await post(Data(), to: "\(base)/deliveries/999999999/replay", key: harness.managementKey)
            #expect(missing.status == 404)
        }
    }
}
