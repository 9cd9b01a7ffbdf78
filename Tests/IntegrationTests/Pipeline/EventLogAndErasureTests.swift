import Foundation
import Hummingbird
import Ingest
import Logging
import Persistence
import PostgresNIO
import Shared
import Testing

extension ExplanationSuites {
    /// The event log (`GET /v1/events`) and erasing a device (`DELETE /v1/devices/{id}`):
    /// docs/evaluation-rules.md#reading-decision-records and #device-erasure.
    @Suite(.serialized) struct EventLogAndErasureTests {
        /// A trip's check-in and check-out are listed newest first with their delivery to the
        /// endpoint, and every filter narrows the list as it says.
        @Test func eventLogListsEventsWithTheirDeliveries() async throws {
            let harness = PipelineHarness()
            try await harness.run { ingestPort, received in
                let trip = TestTrip(projectId: harness.projectId)
                let base = "http://127.0.0.1:\(ingestPort)/v1"
                #expect(try await post(try trip.batch(0..<9), to: "\(base)/fixes", key: harness.deviceKey).status == 202)
                try await received.wait(timeout: .seconds(90)) { trip.isComplete($0) }

                func events(_ query: String) async throws -> (events: [LoggedEvent], next: String?) {
                    let answer = try await post(Data(), to: "\(base)/events?\(query)", key: harness.managementKey, method: .GET)
                    try #require(answer.status == 200, "\(query): \(answer.body)")
                    let page = try WireJSON.decoder().decode(PageAnswer<LoggedEvent>.self, from: Data(answer.body.utf8))
                    return (page.items, page.nextCursor)
                }
                // The deliveries' results are recorded just after the partner answered.
                var listed: [LoggedEvent] = []
                let deadline = ContinuousClock.now + .seconds(30)
                repeat {
                    listed = try await events("deviceId=\(trip.deviceId)").events
                    if listed.count == 2, listed.allSatisfy({ $0.deliveries.first?.status == "delivered" }) { break }
                    try await Task.sleep(for: .milliseconds(200))
                } while ContinuousClock.now < deadline
                #expect(listed.map(\.event.type) == [.checkout, .checkin])
                #expect(listed.allSatisfy { $0.deliveries.count == 1 && $0.deliveries[0].status == "delivered" })
                #expect(listed.allSatisfy { $0.deliveries.first?.attempts == 1 && $0.deliveries.first?.deliveredAt != nil })
                let checkIn = try #require(listed.last?.event)
                let checkOut = try #require(listed.first?.event)

                #expect(try await events("deviceId=\(trip.deviceId)&type=checkin").events.map(\.event.eventId) == [checkIn.eventId])
                #expect(try await events("deviceId=\(trip.deviceId)&zoneId=zone-cafe").events.count == 2)
                #expect(try await events("deviceId=\(trip.deviceId)&zoneId=zone-elsewhere").events.isEmpty)
                let afterCheckIn = RFC3339.format(checkIn.location.timestamp.addingTimeInterval(1))
                #expect(
                    try await events("deviceId=\(trip.deviceId)&from=\(afterCheckIn)").events.map(\.event.eventId)
                        == [checkOut.eventId])
                #expect(
                    try await events("deviceId=\(trip.deviceId)&until=\(afterCheckIn)").events.map(\.event.eventId)
                        == [checkIn.eventId])
                let first = try await events("deviceId=\(trip.deviceId)&limit=1")
                #expect(first.events.map(\.event.eventId) == [checkOut.eventId])
                let next = try #require(first.next)
                #expect(
                    try await events("deviceId=\(trip.deviceId)&limit=1&cursor=\(next)").events.map(\.event.eventId)
                        == [checkIn.eventId])

                let unknown = try await post(
                    Data(), to: "\(base)/events?device=\(trip.deviceId)", key: harness.managementKey, method: .GET)
                #expect(unknown.status == 400 && unknown.body.contains("\"device\""))
                let badTime = try await post(Data(), to: "\(base)/events?from=yesterday", key: harness.managementKey, method: .GET)
                #expect(badTime.status == 400 && badTime.body.contains("\"from\""))
            }
        }

        /// After `DELETE /v1/devices/{id}`, no table holds the device's positions, its state or its
        /// decisions; its delivered check-in keeps its row without the payload and its undelivered
        /// check-out is cancelled (and not sent again); its next fix starts a new state.
        @Test func erasureLeavesNothingOfTheDeviceAndItStartsAfresh() async throws {
            var configured = PipelineHarness()
            // A database of its own, so that every row of every table is this test's.
            configured.databaseURL = try await freshDatabaseURL(logger: configured.logger)
            configured.respond = { payload, _ in payload.data.type == .checkout ? Response(status: .internalServerError) : nil }
            let harness = configured
            try await harness.run { ingestPort, received in
                let trip = TestTrip(projectId: harness.projectId)
                let base = "http://127.0.0.1:\(ingestPort)/v1"
                #expect(try await post(try trip.batch(0..<9), to: "\(base)/fixes", key: harness.deviceKey).status == 202)
                try await received.wait(timeout: .seconds(90)) { payloads in
                    payloads.contains { $0.data.deviceId == trip.deviceId && $0.data.type == .checkin }
                }
                let attempted = ContinuousClock.now + .seconds(30)
                while await !received.requests.contains(where: {
                    $0.payload.data.deviceId == trip.deviceId && $0.payload.data.type == .checkout
                }), ContinuousClock.now < attempted {
                    try await Task.sleep(for: .milliseconds(100))
                }
                // The positions of the device's fixes as the pipeline took them, but the one on the zone's
                // centre (which the zones table has).
                let records = try await waitForRecords(count: 9, of: trip.deviceId, base: base, key: harness.managementKey)
                let positions = records.map { "\($0.location.lon)" }.filter { $0 != "\(TestTrip.centre.lon)" }
                #expect(positions.count == 8)
                let before = try await rowsMentioning([trip.deviceId] + positions, harness: harness)
                #expect(Set(before.map(\.table)).isSuperset(of: ["device_states", "decision_records", "event_log", "deliveries"]))
                #expect(before.contains { row in row.table == "event_payloads" && positions.contains { row.text.contains($0) } })
                let deliveryIds = try await deliveryStates(of: trip.deviceId, harness: harness).map(\.id)
                #expect(deliveryIds.count == 2)

                let erased = try await post(Data(), to: "\(base)/devices/\(trip.deviceId)", key: harness.managementKey, method: .DELETE)
                try #require(erased.status == 200, "\(erased.body)")
                let erasure = try JSONDecoder().decode(DeviceErasure.self, from: Data(erased.body.utf8))
                #expect(erasure.states == 1 && erasure.decisionRecords == 9 && erasure.loggedEvents == 2)
                #expect(erasure.deliveriesErased == 2 && erasure.deliveriesCancelled == 1)

                // No row of any table names it or holds a position of it: its deliveries keep
                // their rows without its id.
                let after = try await rowsMentioning([trip.deviceId] + positions, harness: harness)
                #expect(after.isEmpty, "the device is still in \(after.map(\.table))")
                let deliveries = try await deliveryStates(ids: deliveryIds, harness: harness)
                #expect(deliveries.map(\.status).sorted() == ["cancelled", "delivered"])
                #expect(deliveries.allSatisfy { $0.payload.isEmpty && $0.erased })

                // The cancelled check-out is not tried again.
                let attempts = await received.requests.filter { $0.payload.data.deviceId == trip.deviceId }.count
                try await Task.sleep(for: .seconds(3))
                #expect(await received.requests.filter { $0.payload.data.deviceId == trip.deviceId }.count == attempts)

                // Nor can either be replayed: their rows stay, shown without a payload, and a replay
                // says they were erased, not that there is no such delivery.
                let erasedIds = deliveries.map { "dlv_\($0.id)" }.sorted()
                for id in erasedIds {
                    let shown = try await post(Data(), to: "\(base)/deliveries/\(id)", key: harness.managementKey, method: .GET)
                    #expect(shown.status == 200, "\(shown.body)")
                    let replayed = try await post(Data(), to: "\(base)/deliveries/\(id)/replay", key: harness.managementKey)
                    #expect(replayed.status == 409 && replayed.body.contains("delivery-erased"), "\(replayed.body)")
                }
                let together = try await post(
                    Data(#"{"ids": ["\#(erasedIds.joined(separator: #"", ""#))"]}"#.utf8), to: "\(base)/deliveries/replay",
                    key: harness.managementKey)
                #expect(together.status == 409 && together.body.contains("delivery-erased"), "\(together.body)")
                #expect(erasedIds.allSatisfy { together.body.contains($0) }, "\(together.body)")
                #expect(await received.requests.filter { $0.payload.data.deviceId == trip.deviceId }.count == attempts)

                let missing = try await post(Data(), to: "\(base)/devices/\(trip.deviceId)", key: harness.managementKey, method: .GET)
                #expect(missing.status == 404)
                let metrics = try await post(Data(), to: "http://127.0.0.1:\(ingestPort)/metrics", key: nil, method: .GET)
                #expect(metrics.body.contains("checkin_devices_erased_total"))

                // It reports again: a new state, its events numbered from 1.
                #expect(try await post(try trip.batch(0..<5), to: "\(base)/fixes", key: harness.deviceKey).status == 202)
                let fresh = try await waitForRecords(count: 5, of: trip.deviceId, base: base, key: harness.managementKey)
                #expect(fresh.count == 5)
                let view = try await post(Data(), to: "\(base)/devices/\(trip.deviceId)", key: harness.managementKey, method: .GET)
                let device = try WireJSON.decoder().decode(DeviceView.self, from: Data(view.body.utf8))
                #expect(device.sequence == 1 && device.openCheckIns.count == 1)
            }
        }

        struct Mention: Sendable {
            var table: String
            var text: String
        }

        /// Every row of every table of the test's database whose text holds one of `needles`.
        func rowsMentioning(_ needles: [String], harness: PipelineHarness) async throws -> [Mention] {
            try await Database.withTemporaryClient(configuration: try harness.databaseConfiguration(), logger: harness.logger) {
                database in
                var tables: [String] = []
                for try await name in try await database.client.query(
                    "SELECT table_name::text FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'",
                    logger: harness.logger
                ).decode(String.self) {
                    tables.append(name)
                }
                #expect(tables.count > 10)
                var found: [Mention] = []
                for table in tables {
                    for needle in needles {
                        let rows = try await database.client.query(
                            "SELECT t::text FROM \(unescaped: table) t WHERE strpos(t::text, \(needle)) > 0", logger: harness.logger)
                        for try await text in rows.decode(String.self) { found.append(Mention(table: table, text: text)) }
                    }
                }
                return found
            }
        }

        func deliveryStates(of deviceId: String? = nil, ids: [Int64] = [], harness: PipelineHarness) async throws
            -> [(id: Int64, status: String, payload: String, erased: Bool)]
        {
            try await Database.withTemporaryClient(configuration: try harness.databaseConfiguration(), logger: harness.logger) {
                database in
                var result: [(id: Int64, status: String, payload: String, erased: Bool)] = []
                for try await (id, status, payload, erased) in try await database.client.query(
                    """
                    SELECT d.id, d.status, b.payload, d.erased_at IS NOT NULL
                      FROM deliveries d JOIN event_payloads b ON b.project_id = d.project_id AND b.event_id = d.event_id
                     WHERE d.device_id = \(deviceId ?? "") OR d.id = ANY(\(ids)::int8[])
                     ORDER BY d.id
                    """,
                    logger: harness.logger
                ).decode((Int64, String, String, Bool).self) {
                    result.append((id, status, payload, erased))
                }
                return result
            }
        }
    }
}

