import Foundation
import Hummingbird
import HummingbirdTesting
import Ingest
import Persistence
import Shared
import Testing

/// `GET /v1/deliveries` lists one endpoint's or one device's deliveries, with a status and a
/// page at a time like the whole list; an endpoint the project does not have lists nothing.
@Suite struct DeliveryFilterTests {
    /// Two disabled endpoints of the project: the first with three deliveries of each of two
    /// devices, the second with two of the first device; one of the first endpoint's failed.
    @Test func deliveriesAreListedByEndpointAndByDeviceWithStatusAndCursor() async throws {
        let conventions = ManagementConventionsTests()
        try await conventions.withIngest { harness, database, client in
            let webhooks = WebhookStore(database: database, logger: harness.logger, sealer: harness.sealer)
            var endpoints: [String] = []
            for name in ["first", "second"] {
                let endpoint = try await webhooks.addEndpoint(
                    projectId: harness.projectId, url: "http://127.0.0.1:9/\(name)-\(harness.suffix)",
                    secrets: [WebhookSecret.generate()])
                _ = try await webhooks.disableEndpoint(id: endpoint.id, projectId: harness.projectId, reason: "test")
                endpoints.append(endpoint.id)
            }
            let (phone, tablet) = ("phone-\(harness.suffix)", "tablet-\(harness.suffix)")
            // Queued one endpoint and device at a time, so that their ids are in this order.
            for (endpoint, device) in [(endpoints[0], phone), (endpoints[0], tablet), (endpoints[1], phone)] {
                let count = endpoint == endpoints[0] ? 3 : 2
                let queued = (1...count).map { sequence in
                    NewDelivery(
                        endpointId: endpoint, projectId: harness.projectId, eventId: "\(endpoint)-\(device)-\(sequence)",
                        eventType: "checkin", deviceId: device, eventTime: Date(), sequence: sequence, payload: "{}")
                }
                #expect(try await webhooks.enqueue(queued) == count)
            }
            try await database.client.query(
                "UPDATE deliveries SET status = 'failed' WHERE event_id = \("\(endpoints[0])-\(phone)-2")", logger: harness.logger)

            let key: HTTPFields = [.authorization: "Bearer \(harness.managementKey)"]
            /// Every page of `query`, two at a time: the deliveries' (endpoint, device) in order.
            func listed(_ query: String) async throws -> [[String]] {
                var found: [[String]] = []
                var ids: [Int64] = []
                var cursor: String?
                var pages = 0
                repeat {
                    let uri = "/v1/deliveries?limit=2&\(query)" + (cursor.map { "&cursor=\($0)" } ?? "")
                    let answer = try await client.execute(uri: uri, method: .get, headers: key)
                    #expect(answer.status == .ok, "\(uri): \(String(buffer: answer.body))")
                    let page = try #require(try JSONSerialization.jsonObject(with: Data(buffer: answer.body)) as? [String: Any])
                    for delivery in page["deliveries"] as? [[String: Any]] ?? [] {
                        found.append([delivery["endpointId"] as? String ?? "", delivery["deviceId"] as? String ?? ""])
                        ids += [(delivery["id"] as? String).flatMap { DeliveryIdentifier.number($0) } ?? 0]
                    }
                    cursor = page["nextCursor"] as? String
                    pages += 1
                } while cursor != nil && pages < 10
                #expect(ids == ids.sorted(by: >) && Set(ids).count == ids.count, "\(query): \(ids)")
                return found
            }
            let (first, second) = (endpoints[0], endpoints[1])
            /// `count` deliveries of one endpoint and device, as `listed` gives them.
            func times(_ count: Int, _ pair: [String]) -> [[String]] { Array(repeating: pair, count: count) }
            #expect(try await listed("endpointId=\(first)") == times(3, [first, tablet]) + times(3, [first, phone]))
            #expect(try await listed("endpointId=\(second)") == times(2, [second, phone]))
            #expect(try await listed("deviceId=\(phone)") == times(2, [second, phone]) + times(3, [first, phone]))
            #expect(try await listed("deviceId=\(phone)&endpointId=\(first)") == times(3, [first, phone]))
            #expect(try await listed("endpointId=\(first)&status=pending") == times(3, [first, tablet]) + times(2, [first, phone]))
            #expect(try await listed("deviceId=\(phone)&status=failed") == [[first, phone]])
            #expect(try await listed("deviceId=\(tablet)&endpointId=\(second)") == [])
            // An endpoint or a device the project does not have: an empty page, not an error.
            #expect(try await listed("endpointId=we_none") == [])
            #expect(try await listed("deviceId=nobody") == [])
        }
    }
}
