import Foundation
import Logging
@testable import Persistence
import PostgresNIO
import Shared
import Testing

/// The statistics tests' fixtures, and readers of the plans EXPLAIN gives in JSON.
extension DeliveryQueueStatisticsTests {
    static let projectId = "p"

    /// A database of the test's own (the tests analyse and vacuum the whole deliveries table),
    /// migrated, with the project `projectId` and one webhook endpoint.
    func withProject(_ body: @Sendable (Database, WebhookStore, String) async throws -> Void) async throws {
        let logger = logger
        let url = try await freshDatabaseURL(logger: logger)
        try await withMigratedDatabase(url: url, logger: logger) { database in
            let (webhooks, endpointId) = try await Self.projectWithEndpoint(database, logger: logger)
            try await body(database, webhooks, endpointId)
        }
    }

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

    /// `count` delivered deliveries to `endpointId` of 2,000 devices (`device-N`, `old-…`
    /// events), each device's numbered from 1 in turn: a history that went through.
    static func insertDeliveredHistory(_ count: Int, to endpointId: String, in database: Database, logger: Logger)
        async throws
    {
        try await database.client.query(
            """
            INSERT INTO deliveries (endpoint_id, project_id, event_id, event_type, device_id, event_time, sequence,
                                    status, delivered_at)
            SELECT \(endpointId), \(projectId), 'old-' || g, 'checkin', 'device-' || (g % 2000), now(),
                   g / 2000 + 1, 'delivered', now()
              FROM generate_series(0, \(count - 1)) g
            """, logger: logger)
    }

    /// History: 20,000 delivered deliveries to `endpointId` of 2,000 devices; then each
    /// device's next one pending. Analysed, not vacuumed: as a busy table mostly is between
    /// autovacuum's passes.
    static func queueEachDevicesNextAfterHistory(
        to endpointId: String, webhooks: WebhookStore, in database: Database, logger: Logger
    ) async throws {
        try await insertDeliveredHistory(20_000, to: endpointId, in: database, logger: logger)
        let pending = deliveries(to: endpointId, devices: 0..<2000, sequences: 11...11)
        #expect(try await webhooks.enqueue(pending) == pending.count)
        try await database.client.query("ANALYZE deliveries", logger: logger)
    }

    /// The queueing statement of `batch`, for a taker of 100.
    static func queueing(_ batch: [NewDelivery]) -> PostgresQuery {
        WebhookStore.queueStatement(
            batch, bodies: EventPayload.bodies(of: batch), gapHold: .seconds(60),
            taker: WebhookStore.QueueClaim(owner: "a", lease: .seconds(60), limit: 100))
    }

    /// Check-ins of `devices` (`device-N`) to `endpointId`, each device's `sequences` in order.
    static func deliveries(
        to endpointId: String, devices: Range<Int>, sequences: ClosedRange<Int> = 1...1, payload: String = "{}"
    ) -> [NewDelivery] {
        devices.flatMap { device in
            sequences.map { sequence in
                NewDelivery(
                    endpointId: endpointId, projectId: projectId, eventId: "new-\(device)-\(sequence)",
                    eventType: "checkin", deviceId: "device-\(device)", eventTime: Date(), sequence: sequence,
                    payload: payload)
            }
        }
    }

    /// The top node of `statement`'s plan (EXPLAIN with these options, as JSON); with ANALYZE
    /// the statement runs, and a node's counts include its children's.
    /// `settings` are set for the statement alone (SET LOCAL), as the store runs it.
    static func plan(
        of statement: PostgresQuery, options: String, settings: [String] = [], in database: Database, logger: Logger
    ) async throws -> [String: Any] {
        let text = try await database.withTransaction(settings: settings) { connection in
            let explained = try await connection.query(
                PostgresQuery(
                    unsafeSQL: "EXPLAIN (\(options.isEmpty ? "" : options + ", ")FORMAT JSON) " + statement.sql,
                    binds: statement.binds),
                logger: logger)
            var text = ""
            for try await part in explained.decode(String.self) { text += part }
            return text
        }
        guard let plans = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [[String: Any]],
            let plan = plans.first?["Plan"] as? [String: Any]
        else { throw TestFailure("not an EXPLAIN (FORMAT JSON) answer: \(text.prefix(200))") }
        return plan
    }

    /// Runs `statement` under EXPLAIN ANALYZE: the rows it returned, the shared buffers it read
    /// (hit or from disk) and its scans.
    static func run(_ statement: PostgresQuery, settings: [String], in database: Database, logger: Logger)
        async throws -> (rows: Int, buffers: Int, scans: [String])
    {
        let plan = try await plan(of: statement, options: "ANALYZE, BUFFERS", settings: settings, in: database, logger: logger)
        guard let rows = plan["Actual Rows"] as? Int, let hit = plan["Shared Hit Blocks"] as? Int,
            let read = plan["Shared Read Blocks"] as? Int
        else { throw TestFailure("no rows or buffers in the plan: \(plan)") }
        return (rows, hit + read, scans(in: plan))
    }

    /// How many times the scans of `alias` (as the statement names the table; `alias_2` and
    /// so on where the planner copied the subquery) ran in a plan run with ANALYZE.
    static func loops(in node: [String: Any], alias: String) -> Int {
        var count = 0
        if let name = node["Alias"] as? String, node["Relation Name"] != nil,
            name == alias || (name.hasPrefix(alias + "_") && Int(name.dropFirst(alias.count + 1)) != nil)
        {
            count += node["Actual Loops"] as? Int ?? 0
        }
        for child in node["Plans"] as? [[String: Any]] ?? [] { count += loops(in: child, alias: alias) }
        return count
    }

    /// The node types of the scans of `alias` (or `alias_n`) in a plan.
    static func nodeTypes(in node: [String: Any], alias: String) -> [String] {
        var found: [String] = []
        if let name = node["Alias"] as? String, node["Relation Name"] != nil,
            name == alias || (name.hasPrefix(alias + "_") && Int(name.dropFirst(alias.count + 1)) != nil),
            let type = node["Node Type"] as? String
        {
            found.append(type)
        }
        for child in node["Plans"] as? [[String: Any]] ?? [] { found += nodeTypes(in: child, alias: alias) }
        return found
    }

    /// The index conditions of every scan in a plan, as EXPLAIN writes them.
    static func indexConditions(in node: [String: Any]) -> [String] {
        var found: [String] = []
        if let condition = node["Index Cond"] as? String { found.append(condition) }
        for child in node["Plans"] as? [[String: Any]] ?? [] { found += indexConditions(in: child) }
        return found
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
