import Foundation
import Logging
import PostgresNIO
import Shared
import Testing

@testable import Persistence

/// A project's reads of its deliveries (a page of `GET /v1/deliveries`, the replay of its
/// failed ones) cost what they find of its own, however many deliveries other projects
/// have: one tenant's history never slows another's. Measured in what the plan read (EXPLAIN
/// ANALYZE), which does not depend on the machine's speed. In a database of its own: the
/// tests analyse the whole deliveries table.
@Suite struct ProjectDeliveryReadsTests {
    let logger = Logger.forTests("test.project-delivery-reads")

    /// A small project's 2,000 deliveries, then a large one's 40,000 newer ones. Read newest
    /// first through the table's own ids, the small project's first page passed over all
    /// 40,000 of the other's (1,364 buffers for a page of 50, and 1,218 for a page of its
    /// failed ones); as a range of its own index, a page reads little more than itself.
    @Test func aProjectsPageReadsItsOwnDeliveriesAndNoOtherProjects() async throws {
        let logger = logger
        try await withSmallBesideLarge(largeFailedEvery: 2) { database, webhooks, endpoints in
            /// The page's rows and the shared buffers read for them.
            func page(_ filter: DeliveryListFilter?, before cursor: Int64? = nil) async throws -> (rows: Int, buffers: Int) {
                let statement = WebhookStore.pageStatement(projectId: "small", filter: filter, before: cursor, limit: 50)
                let run = try await DeliveryQueueStatisticsTests.run(statement, settings: [], in: database, logger: logger)
                return (run.rows, run.buffers)
            }
            let first = try await page(nil)
            #expect(first.rows == 51)
            #expect(first.buffers < 100, "the first page of 50 read \(first.buffers) buffers")

            // A later page, from the cursor of one in the middle of the small project's history
            // (this one read only the small project's rows before the change too: from such a
            // cursor the table's ids newest first are the small project's).
            let listed = try await webhooks.deliveries(projectId: "small", filter: nil, before: nil, limit: 1_000)
            #expect(listed.deliveries.count == 1_000)
            let middle = try await page(nil, before: listed.nextCursor)
            #expect(middle.rows == 51)
            #expect(middle.buffers < 100, "a page from the middle read \(middle.buffers) buffers")

            // Filtered by status: the small project's failed ones (one in ten), beside 20,000
            // failed of the other. (A guard: this page read under 100 buffers without the index
            // of the project's failed ones too, as one in ten lie close together; the test of a
            // few failed among many delivered below is the one that needs it.)
            let failed = try await page(.status(.failed))
            #expect(failed.rows == 51)
            #expect(failed.buffers < 100, "a page of failed deliveries read \(failed.buffers) buffers")

            // What a page returns is the project's alone, newest first.
            let answered = try await webhooks.deliveries(projectId: "small", filter: nil, before: nil, limit: 50)
            #expect(answered.deliveries.allSatisfy { $0.endpointId == endpoints["small"] })
            #expect(answered.deliveries.map(\.id) == answered.deliveries.map(\.id).sorted(by: >))
        }
    }

    /// A project's 10 failed deliveries spread among 20,000 delivered ones. Read as a range of
    /// the project's index, the page of them passed over all 20,000 (the whole history lies
    /// between the newest failed one and the oldest); as a range of the index of its failed
    /// ones, it reads those 10.
    @Test func aPageOfFailedDeliveriesReadsTheFailedOnesAndNotTheHistory() async throws {
        let logger = logger
        let url = try await freshDatabaseURL(logger: logger)
        try await withMigratedDatabase(url: url, logger: logger) { database in
            let projects = ProjectStore(database: database, logger: logger)
            let webhooks = WebhookStore(database: database, logger: logger, sealer: SecretSealer(key: .generate()))
            try await projects.createProject(id: "quiet", name: "quiet")
            let endpoint = try await webhooks.addEndpoint(
                projectId: "quiet", url: "http://127.0.0.1:9/quiet", secrets: [WebhookSecret.generate()]
            ).id
            try await Self.insertHistory(20_000, of: "quiet", to: endpoint, failedEvery: 2_000, in: database, logger: logger)
            try await database.client.query("VACUUM ANALYZE deliveries", logger: logger)

            let statement = WebhookStore.pageStatement(projectId: "quiet", filter: .status(.failed), before: nil, limit: 50)
            let run = try await DeliveryQueueStatisticsTests.run(statement, settings: [], in: database, logger: logger)
            #expect(run.rows == 10)
            #expect(run.buffers < 50, "a page of 10 failed among 20,000 read \(run.buffers) buffers")

            let page = try await webhooks.deliveries(projectId: "quiet", filter: .status(.failed), before: nil, limit: 50)
            #expect(page.deliveries.count == 10)
            #expect(page.deliveries.allSatisfy { $0.status == .failed })
            #expect(page.nextCursor == nil)
        }
    }

    /// A project's quiet endpoint with 10 deliveries, then its loud one with 20,000 newer ones
    /// of 500 devices (40 each). Without an index of an endpoint's deliveries in id order and
    /// one of the project's by device, a page of the loud endpoint's newest 50 and a page of
    /// one device each read the whole table (579 and 577 buffers); with them, 6 and 43.
    @Test func aPageOfOneEndpointOrDeviceReadsItsOwnDeliveries() async throws {
        let logger = logger
        let url = try await freshDatabaseURL(logger: logger)
        try await withMigratedDatabase(url: url, logger: logger) { database in
            let projects = ProjectStore(database: database, logger: logger)
            let webhooks = WebhookStore(database: database, logger: logger, sealer: SecretSealer(key: .generate()))
            var endpoints: [String: String] = [:]
            for project in ["busy", "other"] { try await projects.createProject(id: project, name: project) }
            for (project, name) in [("busy", "quiet"), ("busy", "loud"), ("other", "other")] {
                endpoints[name] = try await webhooks.addEndpoint(
                    projectId: project, url: "http://127.0.0.1:9/\(name)", secrets: [WebhookSecret.generate()]
                ).id
            }
            try await Self.insertHistory(10, of: "busy", to: endpoints["quiet"]!, failedEvery: 2, in: database, logger: logger)
            try await Self.insertHistory(20_000, of: "busy", to: endpoints["loud"]!, failedEvery: 10, in: database, logger: logger)
            try await database.client.query("VACUUM ANALYZE deliveries", logger: logger)

            /// The page's rows and the shared buffers read for them.
            func page(
                _ filter: DeliveryListFilter? = nil, endpoint: String? = nil, device: String? = nil, project: String = "busy"
            ) async throws -> (rows: Int, buffers: Int, scans: [String]) {
                let statement = WebhookStore.pageStatement(
                    projectId: project, filter: filter, endpointId: endpoint, deviceId: device, before: nil, limit: 50)
                return try await DeliveryQueueStatisticsTests.run(statement, settings: [], in: database, logger: logger)
            }
            let quiet = try await page(endpoint: endpoints["quiet"])
            #expect(quiet.rows == 10)
            #expect(quiet.buffers < 50, "a page of the quiet endpoint's 10 read \(quiet.buffers) buffers: \(quiet.scans)")
            let loud = try await page(endpoint: endpoints["loud"])
            #expect(loud.rows == 51)
            #expect(loud.buffers < 100, "a page of the loud endpoint's newest 50 read \(loud.buffers) buffers: \(loud.scans)")
            let quietFailed = try await page(.status(.failed), endpoint: endpoints["quiet"])
            #expect(quietFailed.rows == 5)
            #expect(quietFailed.buffers < 50, "a page of its 5 failed read \(quietFailed.buffers) buffers")

            let device = try await page(device: "device-7")
            #expect(device.rows == 41)
            #expect(device.buffers < 100, "a page of one device's 41 read \(device.buffers) buffers: \(device.scans)")
            let deviceOfEndpoint = try await page(.status(.delivered), endpoint: endpoints["loud"], device: "device-7")
            #expect(deviceOfEndpoint.rows == 40)
            #expect(
                deviceOfEndpoint.buffers < 100,
                "a page of one device's delivered read \(deviceOfEndpoint.buffers) buffers: \(deviceOfEndpoint.scans)")

            // Another project's endpoint reads none of its deliveries.
            let elsewhere = try await page(endpoint: endpoints["loud"], project: "other")
            #expect(elsewhere.rows == 0)
            #expect(elsewhere.buffers < 10, "a page of another project's endpoint read \(elsewhere.buffers) buffers")

            // What a page returns is that endpoint's, or that device's, newest first.
            let answered = try await webhooks.deliveries(
                projectId: "busy", filter: nil, endpointId: endpoints["quiet"], before: nil, limit: 4)
            #expect(answered.deliveries.count == 4 && answered.deliveries.allSatisfy { $0.endpointId == endpoints["quiet"] })
            let next = try await webhooks.deliveries(
                projectId: "busy", filter: nil, endpointId: endpoints["quiet"], before: answered.nextCursor, limit: 50)
            #expect(next.deliveries.count == 6 && next.nextCursor == nil)
            let ids = (answered.deliveries + next.deliveries).map(\.id)
            #expect(ids == ids.sorted(by: >))
            let ofDevice = try await webhooks.deliveries(projectId: "busy", filter: nil, deviceId: "device-7", before: nil, limit: 100)
            #expect(ofDevice.deliveries.count == 41 && ofDevice.deliveries.allSatisfy { $0.deviceId == "device-7" })
        }
    }

    /// A small project's 200 failed deliveries are replayed beside a large project's 40,000
    /// failed ones. Found by the project alone, the replay read the failed ones' index entry
    /// for all 40,200 (42,600 rows examined in the deliveries table and its indexes); found
    /// through the project's endpoints, it examined 400 or 2,600 in five runs (the planner, by
    /// the sample ANALYZE took, may also read the small project's own 2,000 in its index):
    /// under two for each of the small project's deliveries, whatever the large one holds.
    @Test func aReplayOfAProjectsFailedDeliveriesReadsNoOtherProjects() async throws {
        let logger = logger
        try await withSmallBesideLarge(largeFailedEvery: 1) { database, _, _ in
            let statement = WebhookStore.replayFailedStatement(projectId: "small", endpointId: nil)
            let plan = try await DeliveryQueueStatisticsTests.plan(
                of: statement, options: "ANALYZE, BUFFERS", in: database, logger: logger)
            #expect(plan["Actual Rows"] as? Int == 200)
            let examined = Self.deliveriesRowsExamined(in: plan)
            #expect(examined < 2 * 2_000, "the replay examined \(examined) rows of the deliveries and their indexes")

            // What it replayed is the small project's alone.
            let stillFailed = try await database.client.query(
                "SELECT project_id, count(*)::int8 FROM deliveries WHERE status = 'failed' GROUP BY project_id", logger: logger)
            var failed: [String: Int] = [:]
            for try await (project, count) in stillFailed.decode((String, Int).self) { failed[project] = count }
            #expect(failed == ["large": 40_000])
        }
    }

    /// The rows that the scans of the deliveries table and of its indexes returned or filtered
    /// out in a plan run with ANALYZE, over all their loops (EXPLAIN gives both per loop): an
    /// index entry and the row it leads to count twice. Whatever way the plan takes, a
    /// sequential scan included, what it reads of other projects' deliveries counts.
    static func deliveriesRowsExamined(in node: [String: Any]) -> Int {
        var rows = 0
        let onDeliveries =
            node["Relation Name"] as? String == "deliveries" || (node["Index Name"] as? String)?.hasPrefix("deliveries_") == true
        if onDeliveries, (node["Node Type"] as? String)?.hasSuffix("Scan") == true {
            let perLoop = ["Actual Rows", "Rows Removed by Filter", "Rows Removed by Index Recheck"]
                .reduce(0) { $0 + (node[$1] as? Int ?? 0) }
            rows += perLoop * (node["Actual Loops"] as? Int ?? 1)
        }
        for child in node["Plans"] as? [[String: Any]] ?? [] { rows += deliveriesRowsExamined(in: child) }
        return rows
    }

    /// Two projects with an endpoint each, in a database of their own: "small" with 2,000
    /// deliveries (one in ten failed), then "large" with 40,000 newer ones (every
    /// `largeFailedEvery`th failed), vacuumed and analysed. `body` gets the endpoints by project.
    func withSmallBesideLarge(
        largeFailedEvery: Int, _ body: @Sendable (Database, WebhookStore, [String: String]) async throws -> Void
    ) async throws {
        let logger = logger
        let url = try await freshDatabaseURL(logger: logger)
        try await withMigratedDatabase(url: url, logger: logger) { database in
            let projects = ProjectStore(database: database, logger: logger)
            let webhooks = WebhookStore(database: database, logger: logger, sealer: SecretSealer(key: .generate()))
            var endpoints: [String: String] = [:]
            for project in ["small", "large"] {
                try await projects.createProject(id: project, name: project)
                endpoints[project] = try await webhooks.addEndpoint(
                    projectId: project, url: "http://127.0.0.1:9/\(project)", secrets: [WebhookSecret.generate()]
                ).id
            }
            try await Self.insertHistory(2_000, of: "small", to: endpoints["small"]!, failedEvery: 10, in: database, logger: logger)
            try await Self.insertHistory(
                40_000, of: "large", to: endpoints["large"]!, failedEvery: largeFailedEvery, in: database, logger: logger)
            try await database.client.query("VACUUM ANALYZE deliveries", logger: logger)
            try await body(database, webhooks, endpoints)
        }
    }

    /// `count` deliveries of `project` to `endpointId`, of 500 devices, every `failedEvery`th
    /// failed and the others delivered.
    static func insertHistory(
        _ count: Int, of project: String, to endpointId: String, failedEvery: Int, in database: Database, logger: Logger
    ) async throws {
        try await database.client.query(
            """
            INSERT INTO deliveries (endpoint_id, project_id, event_id, event_type, device_id, event_time, sequence,
                                    status, delivered_at)
            SELECT \(endpointId), \(project), 'old-' || g, 'checkin', 'device-' || (g % 500), now(), g / 500 + 1,
                   CASE WHEN g % \(failedEvery) = 0 THEN 'failed' ELSE 'delivered' END,
                   CASE WHEN g % \(failedEvery) = 0 THEN NULL ELSE now() END
              FROM generate_series(0, \(count - 1)) g
            """, logger: logger)
    }
}
