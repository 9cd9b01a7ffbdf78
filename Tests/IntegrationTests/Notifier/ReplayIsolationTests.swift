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
    /// Tenant A's partner fails everything and A's retries wait long: each of A's devices has
    /// its check-in retrying and its check-out waiting behind it. A lists its pending
    /// deliveries and asks to replay them: refused (409 naming them), nothing is made due.
    /// Tenant B's partner answers each webhook's first attempt 503 `Retry-After: 1`: B's
    /// webhooks are all delivered within 30 s of being due, each device's in order, and no
    /// partner sees two requests about one device at once. (That a replay's due non-heads
    /// starve another tenant's claims is shown where the queue is read alone:
    /// `noTenantsQueueStarvesAnothersClaim`.)
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
            configuration.maximumAttempts = 20
            configuration.initialRetryDelay = .seconds(60)
            configuration.maximumRetryDelay = .seconds(60)
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
            // Every device's check-in tried once and waiting for its retry, its check-out behind it.
            let deadline = ContinuousClock.now + .seconds(60)
            while await Set(received.requests.filter { $0.payload.data.projectId == tenantA }.map(\.payload.data.deviceId)).count
                < tripsA.count, ContinuousClock.now < deadline
            {
                try await Task.sleep(for: .milliseconds(100))
            }
            // The check-outs are queued behind the check-ins; list once every one of them is.
            var pending: [String] = []
            while pending.count < 2 * tripsA.count, ContinuousClock.now < deadline {
                let listed = try await post(
                    Data(), to: "\(base)/deliveries?status=pending&limit=1000", key: harness.managementKey, method: .GET)
                let page = try JSONSerialization.jsonObject(with: Data(listed.body.utf8)) as? [String: Any]
                pending = (page?["deliveries"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
                if pending.count < 2 * tripsA.count { try await Task.sleep(for: .milliseconds(200)) }
            }
            #expect(pending.count == 2 * tripsA.count)
            let ids = pending.map { #""\#($0)""# }.joined(separator: ",")
            let replay = try await post(Data(#"{"ids": [\#(ids)]}"#.utf8), to: "\(base)/deliveries/replay", key: harness.managementKey)
            #expect(replay.status == 409 && replay.body.contains("delivery-pending"), "\(replay.status) \(replay.body.prefix(300))")
            // Had the replay been taken, A's check-ins would go again at once (and wait again):
            // B's traffic comes once they would have, when only what the replay made due is left.
            let attempted = await received.requests.filter { $0.payload.data.projectId == tenantA }.count
            let settled = ContinuousClock.now + .seconds(5)
            while await received.requests.filter({ $0.payload.data.projectId == tenantA }).count < attempted + tripsA.count,
                ContinuousClock.now < settled
            {
                try await Task.sleep(for: .milliseconds(100))
            }

            let tripsB = (0..<50).map { _ in TestTrip(projectId: tenantB) }
            #expect(try await post(try laps(tripsB), to: "\(base)/fixes", key: keyB).status == 202)
            // Each of B's webhooks is due a second after its first attempt: all within 30 s of that.
            try await received.wait(timeout: .seconds(35)) { payloads in tripsB.allSatisfy { $0.isComplete(payloads) } }
            let accepted = await received.payloads.filter { $0.data.projectId == tenantB }
            #expect(accepted.count == 2 * tripsB.count)
            for trip in tripsB {
                let sequences = accepted.filter { $0.data.deviceId == trip.deviceId }.map(\.data.sequence)
                #expect(sequences == [1, 2], "device \(trip.deviceId): \(sequences)")
            }
            #expect(await received.deviceOverlaps == 0, "a device's deliveries were sent side by side")
        }
    }

    /// One request body of these trips' whole laps.
    func laps(_ trips: [TestTrip]) throws -> Data {
        try JSONSerialization.data(withJSONObject: ["fixes": trips.flatMap { trip in (0..<9).map(trip.fix) }])
    }
}
