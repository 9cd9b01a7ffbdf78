import Foundation
import Logging
@testable import Persistence
import PostgresNIO
import Shared
import Testing

/// A claim's cost follows what it returns even when the table's statistics were taken at a
/// quiet moment: the partner kept up (nothing pending when ANALYZE ran), then a backlog
/// formed. Measured in buffers read (EXPLAIN ANALYZE), which do not depend on the machine's
/// speed. In a database of its own: the test analyses the whole deliveries table.
@Suite struct DeliveryQueueStatisticsTests {
    let logger: Logger = {
        var logger = Logger(label: "test.queue-statistics")
        logger.logLevel = .warning
        return logger
    }()

    @Test func aClaimReadsLittleMoreThanItReturnsAfterAnAnalyzeThatSawNothingPending() async throws {
        let logger = logger
        let url = try await freshDatabaseURL(logger: logger)
        try await withMigratedDatabase(url: url, logger: logger) { database in
            let (webhooks, endpointId) = try await Self.projectWithEndpoint(database, logger: logger)
            let projectId = Self.projectId
            // History: ten delivered deliveries for each of 2,000 devices, analysed with none pending.
            try await database.client.query(
                """
                INSERT INTO deliveries (endpoint_id, project_id, event_id, event_type, device_id, event_time, sequence,
                                        payload, status, delivered_at)
                SELECT \(endpointId), \(projectId), 'old-' || g, 'checkin', 'device-' || (g % 2000), now(),
                       g / 2000 + 1, '{}', 'delivered', now()
                  FROM generate_series(0, 19999) g
                """, logger: logger)
            try await database.client.query("VACUUM ANALYZE deliveries", logger: logger)
            // Then a backlog: each device's next two events, the first of each due; the claim's
            // reads measured, then measured again with the backlog doubled.
            func queueBacklog(devices: Range<Int>) async throws {
                let backlog: [NewDelivery] = devices.flatMap { device -> [NewDelivery] in
                    (11...12).map { (sequence: Int) -> NewDelivery in
                        NewDelivery(
                            endpointId: endpointId, projectId: projectId, eventId: "new-\(device)-\(sequence)",
                            eventType: "checkin", deviceId: "device-\(device)", eventTime: Date(), sequence: sequence,
                            payload: "{}")
                    }
                }
                #expect(try await webhooks.enqueue(backlog) == backlog.count)
            }
            /// Deliveries claimed and the shared buffers read for them (hit or from disk).
            func claimReads() async throws -> (claimed: Int, buffers: Int) {
                let claim = WebhookStore.claimStatement(
                    limit: 100, perEndpoint: 1000, owner: "a", lease: .seconds(60), gapHold: .seconds(60), excluding: [])
                let plan = try await Self.plan(of: claim, options: "ANALYZE, BUFFERS", in: database, logger: logger)
                guard let rows = plan["Actual Rows"] as? Int, let hit = plan["Shared Hit Blocks"] as? Int,
                    let read = plan["Shared Read Blocks"] as? Int
                else { throw TestFailure("no rows or buffers in the claim's plan: \(plan)") }
                return (rows, hit + read)
            }
            try await queueBacklog(devices: 0..<2000)
            let first = try await claimReads()
            try await queueBacklog(devices: 2000..<4000)
            let second = try await claimReads()
            #expect(first.claimed == 100 && second.claimed == 100)
            // A claim reads a window of 400 due rows and probes each device's (about 25 buffers a
            // row, whatever waits): 10,057 buffers with 4,000 pending, 10,054 with 8,000. Planned
            // with the statistics, it scanned the backlog per device: 72,000 to 83,000 and 139,000
            // to 160,000 in two runs.
            #expect(
                Double(second.buffers) < 1.3 * Double(first.buffers),
                "\(first.buffers) buffers with 4,000 pending, \(second.buffers) with 8,000")
            #expect(first.buffers < 200 * first.claimed, "the claim read \(first.buffers) buffers for \(first.claimed) deliveries")
        }
    }

    /// A claim capped per endpoint checks no more of one endpoint's due rows than it may
    /// take: with one partner behind (a due backlog of 2,000 devices at one endpoint), a claim
    /// with room for 128 that may take 32 of that endpoint reads for those 32, not for a
    /// window of 512.
    @Test func aClaimCappedPerEndpointChecksOnlyWhatItMayTake() async throws {
        let logger = logger
        let url = try await freshDatabaseURL(logger: logger)
        try await withMigratedDatabase(url: url, logger: logger) { database in
            let (webhooks, endpointId) = try await Self.projectWithEndpoint(database, logger: logger)
            let backlog = (0..<2000).map { device in
                NewDelivery(
                    endpointId: endpointId, projectId: Self.projectId, eventId: "e-\(device)", eventType: "checkin",
                    deviceId: "device-\(device)", eventTime: Date(), sequence: 1, payload: "{}")
            }
            #expect(try await webhooks.enqueue(backlog) == backlog.count)
            try await database.client.query("VACUUM ANALYZE deliveries", logger: logger)
            let claim = WebhookStore.claimStatement(
                limit: 128, perEndpoint: 32, owner: "a", lease: .seconds(60), gapHold: .seconds(60), excluding: [])
            let plan = try await Self.plan(of: claim, options: "ANALYZE, BUFFERS", in: database, logger: logger)
            guard let claimed = plan["Actual Rows"] as? Int, let hit = plan["Shared Hit Blocks"] as? Int,
                let read = plan["Shared Read Blocks"] as? Int
            else { throw TestFailure("no rows or buffers in the claim's plan: \(plan)") }
            #expect(claimed == 32)
            // Checking the whole window of 512 read 5,062 buffers (158 a delivery taken);
            // checking twice the cap, 1,478 (46 a delivery).
            #expect(hit + read < 75 * claimed, "the claim read \(hit + read) buffers for \(claimed) deliveries")
        }
    }

    /// The operators' backlog count (polled by the notifier's monitor and `checkin status`)
    /// reads the undelivered rows by index, never the whole table of delivered ones.
    @Test func theBacklogCountReadsOnlyUndeliveredRows() async throws {
        let logger = logger
        let url = try await freshDatabaseURL(logger: logger)
        try await withMigratedDatabase(url: url, logger: logger) { database in
            let (_, endpointId) = try await Self.projectWithEndpoint(database, logger: logger)
            try await database.client.query(
                """
                INSERT INTO deliveries (endpoint_id, project_id, event_id, event_type, device_id, event_time, payload, status)
                SELECT \(endpointId), \(Self.projectId), 'e-' || g, 'checkin', 'd-' || (g % 500), now(), repeat('x', 600),
                       CASE WHEN g % 1000 = 0 THEN 'pending' WHEN g % 1000 = 1 THEN 'failed' ELSE 'delivered' END
                  FROM generate_series(0, 29999) g
                """, logger: logger)
            try await database.client.query("VACUUM ANALYZE deliveries", logger: logger)
            let backlog = try await OperationsStore(database: database, logger: logger).deliveryBacklog()
            #expect(backlog.map { [$0.pending, $0.failed] } == [[30, 30]])
            let scans = Self.scans(
                in: try await Self.plan(of: OperationsStore.backlogStatement, options: "", in: database, logger: logger))
            #expect(!scans.contains("Seq Scan on deliveries"), "\(scans)")
            #expect(scans.contains { $0.hasSuffix("on deliveries") }, "\(scans)")
        }
    }

    /// A deployment that took statistics before this change loses them when it migrates, and
    /// takes none on `status` after.
    @Test func migratingDropsTheStatusStatisticsTakenBefore() async throws {
        let logger = logger
        let url = try await freshDatabaseURL(logger: logger)
        @Sendable func statusStatistics(_ database: Database) async throws -> Int {
            try await database.client.query("ANALYZE deliveries", logger: logger)
            let rows = try await database.client.query(
                "SELECT count(*)::int FROM pg_stats WHERE tablename = 'deliveries' AND attname = 'status'", logger: logger)
            var count = 0
            for try await value in rows.decode(Int.self) { count = value }
            return count
        }
        let before = try await withMigratedDatabase(
            url: url, migrations: Migration.all.filter { $0.version < 23 }, logger: logger
        ) { database in
            let (_, endpointId) = try await Self.projectWithEndpoint(database, logger: logger)
            try await database.client.query(
                """
                INSERT INTO deliveries (endpoint_id, project_id, event_id, event_type, device_id, event_time, payload, status)
                SELECT \(endpointId), \(Self.projectId), 'e-' || g, 'checkin', 'd', now(), '{}', 'delivered' FROM generate_series(1, 1000) g
                """, logger: logger)
            return try await statusStatistics(database)
        }
        #expect(before == 1)
        #expect(try await withMigratedDatabase(url: url, logger: logger) { try await statusStatistics($0) } == 0)
    }

    static let projectId = "p"

    /// The project `projectId` with one webhook endpoint, in `database`.
    static func projectWithEndpoint(_ database: Database, logger: Logger) async throws
        -> (webhooks: WebhookStore, endpointId: String)
    {
        try await ProjectStore(database: database, logger: logger).createProject(id: projectId, name: "Statistics")
        let webhooks = WebhookStore(database: database, logger: logger, sealer: SecretSealer(key: .generate()))
        let endpoint = try await webhooks.addEndpoint(
            projectId: projectId, url: "http://127.0.0.1:9/x", secrets: [WebhookSecret.generate()])
        return (webhooks, endpoint.id)
    }

    /// The top node of `statement`'s plan (EXPLAIN with these options, as JSON); with ANALYZE
    /// the statement runs, and a node's counts include its children's.
    static func plan(of statement: PostgresQuery, options: String, in database: Database, logger: Logger)
        async throws -> [String: Any]
    {
        let explained = try await database.client.query(
            PostgresQuery(
                unsafeSQL: "EXPLAIN (\(options.isEmpty ? "" : options + ", ")FORMAT JSON) " + statement.sql,
                binds: statement.binds),
            logger: logger)
        var text = ""
        for try await part in explained.decode(String.self) { text += part }
        guard let plans = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [[String: Any]],
            let plan = plans.first?["Plan"] as? [String: Any]
        else { throw TestFailure("not an EXPLAIN (FORMAT JSON) answer: \(text.prefix(200))") }
        return plan
    }

    /// Every scan in a plan, as "Seq Scan on deliveries" or "Index Scan deliveries_failed on deliveries".
    static func scans(in node: [String: Any]) -> [String] {
        var found: [String] = []
        if let relation = node["Relation Name"] as? String, let type = node["Node Type"] as? String {
            found.append([type, node["Index Name"] as? String, "on", relation].compactMap { $0 }.joined(separator: " "))
        }
        for child in node["Plans"] as? [[String: Any]] ?? [] { found += scans(in: child) }
        return found
    }
}
