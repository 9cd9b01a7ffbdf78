import Foundation
import Hummingbird
import Ingest
import Logging
import Notifier
import Persistence
import PostgresNIO
import Shared
import Testing

extension ExplanationSuites {
    /// Erasing a device whose data is still on its way (docs/evaluation-rules.md#device-erasure):
    /// its fixes on the fixes topic, its events on the event topics, its deliveries retrying or
    /// failed. After the erasure answers, nothing decided from its earlier fixes reaches the
    /// partner and the API shows nothing of it; every other device is delivered; it starts afresh after.
    @Suite(.serialized) struct ErasureInFlightTests {
        /// The device's whole lap is accepted (202) behind other devices' laps while no
        /// evaluator runs, then erased: the answer is the same as for a device with stored
        /// data, and when the evaluator reaches the lap it drops it.
        @Test func fixesStillOnTheTopicAreErasedWithTheDevice() async throws {
            var configured = PipelineHarness()
            configured.databaseURL = try await freshDatabaseURL(logger: configured.logger)
            configured.stages = HeldStages([.evaluator])
            let harness = configured
            try await harness.run { ingestPort, received in
                let base = "http://127.0.0.1:\(ingestPort)/v1"
                let others = (0..<20).map { _ in TestTrip(projectId: harness.projectId) }
                let erased = TestTrip(projectId: harness.projectId)
                for trip in others + [erased] {
                    #expect(try await post(try trip.batch(0..<9), to: "\(base)/fixes", key: harness.deviceKey).status == 202)
                }
                let erasedBefore = try await erasedFixes(ingestPort: ingestPort)

                let answer = try await post(Data(), to: "\(base)/devices/\(erased.deviceId)", key: harness.managementKey, method: .DELETE)
                try #require(answer.status == 200, "\(answer.body)")
                let erasure = try JSONDecoder().decode(DeviceErasure.self, from: Data(answer.body.utf8))
                #expect(erasure == DeviceErasure(deviceId: erased.deviceId), "nothing was stored yet: \(erasure)")

                harness.stages.release(.evaluator)
                try await received.wait(timeout: .seconds(90)) { payloads in others.allSatisfy { $0.isComplete(payloads) } }
                // The evaluator reached the erased lap: its nine fixes were dropped, not evaluated.
                let deadline = ContinuousClock.now + .seconds(30)
                while try await erasedFixes(ingestPort: ingestPort) < erasedBefore + 9, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(100))
                }
                #expect(try await erasedFixes(ingestPort: ingestPort) >= erasedBefore + 9)
                try await expectNothingShown(of: erased.deviceId, base: base, key: harness.managementKey)
                // Anything decided would have been sent by now, as the others' were.
                try await Task.sleep(for: .seconds(2))
                #expect(await received.requests.filter { $0.payload.data.deviceId == erased.deviceId }.isEmpty)

                // It reports again: a new life, its events numbered from 1, and all that is shown
                // of it is of the new life (its lap behind the erased one on their partition).
                let again = TestTrip(projectId: harness.projectId, deviceId: erased.deviceId)
                #expect(try await post(try again.batch(0..<9), to: "\(base)/fixes", key: harness.deviceKey).status == 202)
                try await received.wait(timeout: .seconds(60)) { again.isComplete($0) }
                let sequences = await received.payloads.filter { $0.data.deviceId == erased.deviceId }.map(\.data.sequence)
                #expect(sequences == [1, 2], "\(sequences)")
                let records = try await waitForRecords(count: 9, of: erased.deviceId, base: base, key: harness.managementKey)
                #expect(records.count == 9, "\(records.count) decision records")
                let events = try await post(Data(), to: "\(base)/events?deviceId=\(erased.deviceId)", key: harness.managementKey, method: .GET)
                let logged = try WireJSON.decoder().decode(PageAnswer<LoggedEvent>.self, from: Data(events.body.utf8)).items
                #expect(logged.map(\.event.sequence).sorted() == [1, 2])
            }
        }

        /// The device's events are on the event topics (the outbox is empty of them) while no
        /// notifier runs; erased then, they never become deliveries, and the other devices'
        /// events on the same topics are delivered.
        @Test func eventsOnTheEventTopicsAreNeverDelivered() async throws {
            var configured = PipelineHarness()
            configured.databaseURL = try await freshDatabaseURL(logger: configured.logger)
            configured.stages = HeldStages([.notifier])
            let harness = configured
            try await harness.run { ingestPort, received in
                let base = "http://127.0.0.1:\(ingestPort)/v1"
                let others = (0..<5).map { _ in TestTrip(projectId: harness.projectId) }
                let erased = TestTrip(projectId: harness.projectId)
                for trip in [erased] + others {
                    #expect(try await post(try trip.batch(0..<9), to: "\(base)/fixes", key: harness.deviceKey).status == 202)
                }
                try await waitUntilPublished(events: 2 * (others.count + 1), harness: harness)

                let answer = try await post(Data(), to: "\(base)/devices/\(erased.deviceId)", key: harness.managementKey, method: .DELETE)
                try #require(answer.status == 200, "\(answer.body)")
                let erasure = try JSONDecoder().decode(DeviceErasure.self, from: Data(answer.body.utf8))
                #expect(erasure.states == 1 && erasure.loggedEvents == 2 && erasure.unpublishedEvents == 0, "\(erasure)")

                harness.stages.release(.notifier)
                try await received.wait(timeout: .seconds(90)) { payloads in others.allSatisfy { $0.isComplete(payloads) } }
                try await Task.sleep(for: .seconds(2))
                #expect(await received.requests.filter { $0.payload.data.deviceId == erased.deviceId }.isEmpty)
                try await expectNothingShown(of: erased.deviceId, base: base, key: harness.managementKey)
                let queued = try await withMigratedDatabase(url: harness.databaseURL, logger: harness.logger) { database in
                    var count = 0
                    for try await n in try await database.client.query(
                        """
                        SELECT count(*)::int FROM deliveries d JOIN erased_events x
                            ON x.project_id = d.project_id AND x.event_id = d.event_id
                        """, logger: harness.logger
                    ).decode(Int.self) { count = n }
                    return count
                }
                #expect(queued == 0, "\(queued) deliveries of erased events were queued")
            }
        }

        /// The device's check-in failed (its retries ran out) and its check-out is retrying
        /// when it is erased: nothing more reaches the partner (an attempt already on the wire
        /// excepted), the retrying one is cancelled, neither keeps its payload or the device's
        /// id, and neither can be replayed.
        @Test func retryingAndFailedDeliveriesStopAtTheErasure() async throws {
            var configured = PipelineHarness()
            configured.databaseURL = try await freshDatabaseURL(logger: configured.logger)
            let refused = TestTrip(projectId: configured.projectId)
            configured.respond = { payload, _ in payload.data.deviceId == refused.deviceId ? Response(status: .internalServerError) : nil }
            configured.configureNotifier = { configuration in
                configuration.maximumAttempts = 3
                configuration.initialRetryDelay = .seconds(1)
                configuration.maximumRetryDelay = .seconds(1)
            }
            let harness = configured
            try await harness.run { ingestPort, received in
                let base = "http://127.0.0.1:\(ingestPort)/v1"
                let other = TestTrip(projectId: harness.projectId)
                for trip in [refused, other] {
                    #expect(try await post(try trip.batch(0..<9), to: "\(base)/fixes", key: harness.deviceKey).status == 202)
                }
                // The check-in fails after its three attempts; the check-out, behind it, is tried then.
                let deadline = ContinuousClock.now + .seconds(60)
                var states: [(id: Int64, status: String, attempts: Int)] = []
                repeat {
                    states = try await deliveries(of: refused.deviceId, harness: harness)
                    if states.count == 2, states[0].status == "failed", states[1].status == "pending", states[1].attempts >= 1 { break }
                    try await Task.sleep(for: .milliseconds(50))
                } while ContinuousClock.now < deadline
                try #require(
                    states.count == 2 && states[0].status == "failed" && states[1].status == "pending" && states[1].attempts >= 1,
                    "\(states)")

                let answer = try await post(Data(), to: "\(base)/devices/\(refused.deviceId)", key: harness.managementKey, method: .DELETE)
                try #require(answer.status == 200, "\(answer.body)")
                let sentWhenAnswered = await received.requests.filter { $0.payload.data.deviceId == refused.deviceId }.count
                let erasure = try JSONDecoder().decode(DeviceErasure.self, from: Data(answer.body.utf8))
                #expect(erasure.deliveriesErased == 2 && erasure.deliveriesCancelled == 1, "\(erasure)")

                try await received.wait(timeout: .seconds(60)) { other.isComplete($0) }
                try await Task.sleep(for: .seconds(3))
                let sentSince = await received.requests.filter { $0.payload.data.deviceId == refused.deviceId }.count - sentWhenAnswered
                #expect(sentSince <= 1, "\(sentSince) attempts reached the partner after the erasure answered")

                let after = try await deliveries(ids: states.map(\.id), harness: harness)
                #expect(after.map(\.status).sorted() == ["cancelled", "failed"], "\(after)")
                #expect(try await deliveries(of: refused.deviceId, harness: harness).isEmpty, "a delivery still names the device")
                for id in states.map(\.id) {
                    let replayed = try await post(Data(), to: "\(base)/deliveries/dlv_\(id)/replay", key: harness.managementKey)
                    #expect(replayed.status == 409 && replayed.body.contains("delivery-erased"), "\(replayed.body)")
                }
                try await expectNothingShown(of: refused.deviceId, base: base, key: harness.managementKey)
            }
        }

        /// The device view answers 404, and its decision records and events are empty.
        func expectNothingShown(of deviceId: String, base: String, key: String) async throws {
            let view = try await post(Data(), to: "\(base)/devices/\(deviceId)", key: key, method: .GET)
            #expect(view.status == 404, "\(view.body)")
            let decisions = try await post(Data(), to: "\(base)/devices/\(deviceId)/decisions", key: key, method: .GET)
            #expect(decisions.status == 200)
            #expect(try WireJSON.decoder().decode(PageAnswer<DecisionRecord>.self, from: Data(decisions.body.utf8)).items.isEmpty)
            let events = try await post(Data(), to: "\(base)/events?deviceId=\(deviceId)", key: key, method: .GET)
            #expect(events.status == 200)
            #expect(try WireJSON.decoder().decode(PageAnswer<LoggedEvent>.self, from: Data(events.body.utf8)).items.isEmpty)
        }

        /// `checkin_evaluator_fixes_total{outcome="erased"}` as the process's metrics show it.
        func erasedFixes(ingestPort: Int) async throws -> Double {
            let metrics = try await post(Data(), to: "http://127.0.0.1:\(ingestPort)/metrics", key: nil, method: .GET)
            let line = metrics.body.split(separator: "\n").first {
                $0.hasPrefix("checkin_evaluator_fixes_total{") && $0.contains(#"outcome="erased""#)
            }
            return line.flatMap { $0.split(separator: " ").last }.flatMap { Double($0) } ?? 0
        }

        /// Waits until `events` events were decided and all of them left the outbox for the event topics.
        func waitUntilPublished(events: Int, harness: PipelineHarness) async throws {
            let deadline = ContinuousClock.now + .seconds(60)
            while ContinuousClock.now < deadline {
                let (logged, waiting) = try await withMigratedDatabase(url: harness.databaseURL, logger: harness.logger) { database in
                    var counts = (0, 0)
                    for try await row in try await database.client.query(
                        "SELECT (SELECT count(*)::int FROM event_log), (SELECT count(*)::int FROM event_outbox)", logger: harness.logger
                    ).decode((Int, Int).self) { counts = row }
                    return counts
                }
                if logged >= events && waiting == 0 { return }
                try await Task.sleep(for: .milliseconds(100))
            }
            throw TestFailure("\(events) events were not published within 60 s")
        }

        /// The deliveries of a device, or with these ids, in the device's order.
        func deliveries(of deviceId: String? = nil, ids: [Int64] = [], harness: PipelineHarness) async throws
            -> [(id: Int64, status: String, attempts: Int)]
        {
            try await withMigratedDatabase(url: harness.databaseURL, logger: harness.logger) { database in
                var found: [(id: Int64, status: String, attempts: Int)] = []
                for try await row in try await database.client.query(
                    """
                    SELECT id, status, attempts FROM deliveries
                     WHERE device_id = \(deviceId ?? "") OR id = ANY(\(ids)::int8[]) ORDER BY COALESCE(sequence, 0), id
                    """, logger: harness.logger
                ).decode((Int64, String, Int).self) { found.append(row) }
                return found
            }
        }
    }
}
