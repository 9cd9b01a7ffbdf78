import Foundation
import Hummingbird
import HTTPTypes
import Logging
import Persistence
import Shared
import Testing

/// One tenant's replay never stalls another tenant's deliveries, and never sends two of one
/// device's deliveries at once.
@Suite(.serialized) struct ReplayIsolationTests {
    /// Tenant A's partner fails everything; once A's deliveries have all failed, A replays
    /// them (the check-outs among them wait behind their check-ins) while its partner still
    /// fails. Tenant B's partner answers each webhook's first attempt 503 `Retry-After: 1`:
    /// B's webhooks are delivered all the same, each device's in order, while A's retry.
    @Test func aTenantsReplayDoesNotStallAnotherTenantsRetries() async throws {
        var configured = PipelineHarness()
        configured.databaseURL = try await freshDatabaseURL(logger: configured.logger)
        configured.otherTenants = ["b"]
        let tenantA = configured.projectId
        configured.respond = { payload, arrival in
            if payload.data.projectId == tenantA { return Response(status: .internalServerError) }
            return arrival == 1 ? Response(status: .serviceUnavailable, headers: [.retryAfter: "1"]) : nil
        }
        configured.configureNotifier = { configuration in
            configuration.maximumAttempts = 2
            configuration.initialRetryDelay = .milliseconds(500)
            configuration.maximumRetryDelay = .seconds(1)
        }
        let harness = configured
        let tenantB = harness.tenantId("b")
        let keyB = "ck_device_test_b_\(harness.suffix)"
        try await harness.run { ingestPort, received in
            let base = "http://127.0.0.1:\(ingestPort)/v1"
            try await withMigratedDatabase(url: harness.databaseURL, logger: harness.logger) { database in
                try await ProjectStore(database: database, logger: harness.logger).addKey(keyB, projectId: tenantB, kind: .device)
                var url = ""
                for try await found in try await database.client.query(
                    "SELECT url FROM webhook_endpoints WHERE project_id = \(tenantA)", logger: harness.logger
                ).decode(String.self) { url = found }
                _ = try await WebhookStore(database: database, logger: harness.logger, sealer: harness.sealer).addEndpoint(
                    projectId: tenantB, url: url, secrets: [harness.secret])
            }

            let tripsA = (0..<300).map { _ in TestTrip(projectId: tenantA) }
            for chunk in stride(from: 0, to: tripsA.count, by: 50) {
                let body = try laps(Array(tripsA[chunk..<min(chunk + 50, tripsA.count)]))
                #expect(try await post(body, to: "\(base)/fixes", key: harness.deviceKey).status == 202)
            }
            try await waitUntil(failed: 2 * tripsA.count, of: tenantA, harness: harness)

            let replay = try await post(
                Data(#"{"status": "failed"}"#.utf8), to: "\(base)/deliveries/replay", key: harness.managementKey)
            #expect(replay.status == 202, "\(replay.body)")
            #expect(replay.body.contains(#""replayed":\#(2 * tripsA.count)"#), "\(replay.body)")

            let tripsB = (0..<50).map { _ in TestTrip(projectId: tenantB) }
            let sent = ContinuousClock.now
            #expect(try await post(try laps(tripsB), to: "\(base)/fixes", key: keyB).status == 202)
            // Each of B's webhooks is due a second after its first attempt: all within 30 s of that.
            try await received.wait(timeout: .seconds(35)) { payloads in tripsB.allSatisfy { $0.isComplete(payloads) } }
            let took = ContinuousClock.now - sent
            let accepted = await received.payloads.filter { $0.data.projectId == tenantB }
            #expect(accepted.count == 2 * tripsB.count)
            for trip in tripsB {
                let sequences = accepted.filter { $0.data.deviceId == trip.deviceId }.map(\.data.sequence)
                #expect(sequences == [1, 2], "device \(trip.deviceId): \(sequences)")
            }
            #expect(await received.deviceOverlaps == 0, "a device's deliveries were sent side by side")
            harness.logger.info("tenant B delivered", metadata: ["seconds": "\(took)"])
        }
    }

    /// One request body of these trips' whole laps.
    func laps(_ trips: [TestTrip]) throws -> Data {
        try JSONSerialization.data(withJSONObject: ["fixes": trips.flatMap { trip in (0..<9).map(trip.fix) }])
    }

    func waitUntil(failed count: Int, of projectId: String, harness: PipelineHarness) async throws {
        let deadline = ContinuousClock.now + .seconds(90)
        var failed = 0
        while ContinuousClock.now < deadline {
            failed = try await withMigratedDatabase(url: harness.databaseURL, logger: harness.logger) { database in
                var failed = 0
                for try await n in try await database.client.query(
                    "SELECT count(*)::int FROM deliveries WHERE project_id = \(projectId) AND status = 'failed'",
                    logger: harness.logger
                ).decode(Int.self) { failed = n }
                return failed
            }
            if failed >= count { return }
            try await Task.sleep(for: .milliseconds(200))
        }
        throw TestFailure("\(failed) of \(count) deliveries failed within 90 s")
    }
}
