import Foundation
import Logging
import Persistence
import PostgresNIO
import Shared
import Testing

/// Where a delivery's new version goes when its result is recorded: on its own page, which
/// logs only what changed and lets the page prune the old version. Against
/// the real local Postgres, in a database of this suite's own, so that its pages hold only
/// these rows.
@Suite(.serialized) struct DeliveryPageRoomTests {
    let logger = Logger.forTests("test.page-room")

    static let ownDatabaseURL = Task<String, any Error> {
        var logger = Logger(label: "test.page-room")
        logger.logLevel = .warning
        return try await freshDatabaseURL(logger: logger)
    }

    /// A webhook body of the size the pipeline sends (about 670 bytes).
    static let payload = "{\"type\":\"checkin\",\"data\":" + String(repeating: "x", count: 640) + "}"

    /// Deliveries queued claimed, which fill their pages as far as the table lets them; then
    /// the first of each page is recorded as delivered. Every one of those stays on its page,
    /// but on the last page (which the others' versions may have filled).
    @Test func aRecordedDeliveryStaysOnItsPage() async throws {
        let logger = logger
        try await withMigratedDatabase(url: try await Self.ownDatabaseURL.value, logger: logger) { database in
            let projectId = "page-room-" + UUID().uuidString
            try await ProjectStore(database: database, logger: logger).createProject(id: projectId, name: "Page room")
            let webhooks = WebhookStore(database: database, logger: logger, sealer: SecretSealer(key: .generate()))
            let endpoint = try await webhooks.addEndpoint(
                projectId: projectId, url: "http://127.0.0.1:9/x", secrets: [WebhookSecret.generate()])
            // Rows of about 200 bytes (the body is kept apart, in `event_payloads`): a dozen pages.
            let queued = (0..<300).map { index in
                NewDelivery(
                    endpointId: endpoint.id, projectId: projectId, eventId: "\(projectId)-\(index)", eventType: "checkin",
                    deviceId: "device-\(index)", eventTime: Date(), sequence: 1, payload: Self.payload)
            }
            let (_, claimed, _) = try await webhooks.enqueue(
                queued, claim: WebhookStore.QueueClaim(owner: "a", lease: .seconds(60), limit: queued.count))
            #expect(claimed.count == queued.count)

            let before = try await pages(of: projectId, in: database)
            let lastPage = try #require(before.values.max())
            let firstOfEachPage = Dictionary(grouping: before, by: \.value).values.compactMap { $0.map(\.key).min() }
            let recorded = firstOfEachPage.filter { before[$0] != lastPage }
            #expect(recorded.count >= 5, "the rows fill several pages")
            try await webhooks.record(
                recorded.map {
                    DeliveryResult(
                        deliveryId: $0, attempt: 1, startedAt: Date(), latency: .milliseconds(1), statusCode: 204, error: nil,
                        outcome: .delivered)
                }, owner: "a")

            let after = try await pages(of: projectId, in: database)
            let moved = recorded.filter { after[$0] != before[$0] }
            #expect(moved.isEmpty, "\(moved.count) of \(recorded.count) recorded deliveries moved to another page")
        }
    }

    /// A claimed delivery waits at 'infinity' in the due order while leased, so renewing its
    /// lease, and claiming a device's next delivery with its predecessor's result, change no
    /// column of an index: Postgres writes each as a heap-only update, adding no index entry.
    @Test func renewalsAndClaimsWithAResultAddNoIndexEntries() async throws {
        let logger = logger
        // A database of its own, whose statistics count this test's updates alone.
        try await withMigratedDatabase(url: try await freshDatabaseURL(logger: logger), logger: logger) { database in
            let projectId = "page-room-" + UUID().uuidString
            try await ProjectStore(database: database, logger: logger).createProject(id: projectId, name: "Page room")
            let webhooks = WebhookStore(database: database, logger: logger, sealer: SecretSealer(key: .generate()))
            let endpoint = try await webhooks.addEndpoint(
                projectId: projectId, url: "http://127.0.0.1:9/x", secrets: [WebhookSecret.generate()])
            // Room on every page for every new version, so that only the columns an update
            // changes decide whether it is heap-only (`aRecordedDeliveryStaysOnItsPage` is about room).
            try await database.client.query("ALTER TABLE deliveries SET (fillfactor = 10)", logger: logger)
            let devices = 10
            try await webhooks.enqueue(
                (0..<devices).flatMap { device in
                    (1...2).map { sequence in
                        NewDelivery(
                            endpointId: endpoint.id, projectId: projectId, eventId: "\(projectId)-\(device)-\(sequence)",
                            eventType: "checkin", deviceId: "device-\(device)", eventTime: Date(), sequence: sequence,
                            payload: "{}")
                    }
                })
            let heads = try await webhooks.claimDue(
                limit: 100, perEndpoint: 100, owner: "a", lease: .seconds(60), gapHold: .seconds(60)
            ).filter { $0.projectId == projectId }
            #expect(heads.count == devices)
            let before = try await updates(in: database, atLeast: devices)

            try await webhooks.renewLeases(ids: heads.map(\.id), owner: "a", lease: .seconds(60))
            let chained = try await webhooks.record(
                heads.map {
                    DeliveryResult(
                        deliveryId: $0.id, attempt: $0.attempt, startedAt: Date(), latency: .milliseconds(1), statusCode: 204,
                        error: nil, outcome: .delivered)
                }, owner: "a", chainLease: .seconds(60))
            #expect(chained.count == devices)

            // Each head renewed and recorded, each successor claimed: three updates a device, of
            // which the recording alone (pending to delivered) changes what the indexes hold.
            let after = try await updates(in: database, atLeast: before.all + 3 * devices)
            #expect(after.all - before.all == 3 * devices)
            #expect(after.heapOnly - before.heapOnly == 2 * devices, "heap-only: \(after.heapOnly - before.heapOnly)")
        }
    }

    /// The table's updates and heap-only updates, once the statistics count at least `count`
    /// updates (each connection reports its counts within about ten seconds of going idle).
    private func updates(in database: Database, atLeast count: Int) async throws -> (all: Int, heapOnly: Int) {
        var counts = (all: 0, heapOnly: 0)
        for _ in 0..<60 {
            let rows = try await database.client.query(
                "SELECT n_tup_upd::int, n_tup_hot_upd::int FROM pg_stat_user_tables WHERE relname = 'deliveries'",
                logger: logger)
            for try await (all, heapOnly) in rows.decode((Int, Int).self) { counts = (all, heapOnly) }
            if counts.all >= count { return counts }
            try await Task.sleep(for: .milliseconds(500))
        }
        return counts
    }

    /// The page each of the project's deliveries is on, by id.
    private func pages(of projectId: String, in database: Database) async throws -> [Int64: Int64] {
        let rows = try await database.client.query(
            "SELECT id, (ctid::text::point)[0]::bigint FROM deliveries WHERE project_id = \(projectId)", logger: logger)
        var result: [Int64: Int64] = [:]
        for try await (id, page) in rows.decode((Int64, Int64).self) { result[id] = page }
        return result
    }
}
