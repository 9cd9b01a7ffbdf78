import Foundation
import Logging
@testable import Persistence
import PostgresNIO
import Shared
import Testing

extension DeliveryQueueStatisticsTests {
    /// Whatever one tenant's endpoints hold (a saturated partner's due backlog that the
    /// claimer already holds enough of, a disabled endpoint's scheduled deliveries), a claim
    /// reads what it takes: another tenant's few due deliveries are claimed, and the rows the
    /// claim examines follow them, not the backlog it passes over.
    @Test func aClaimPassesOverASaturatedOrDisabledEndpointWhole() async throws {
        let logger = logger
        try await withProject { database, webhooks, saturated in
            let disabled = try await webhooks.addEndpoint(
                projectId: Self.projectId, url: "http://127.0.0.1:9/y", secrets: [WebhookSecret.generate()]
            ).id
            let other = try await Self.otherTenantEndpoint(database, webhooks: webhooks, logger: logger)
            #expect(try await webhooks.enqueue(Self.deliveries(to: saturated, devices: 0..<20_000)) == 20_000)
            #expect(try await webhooks.enqueue(Self.deliveries(to: disabled, devices: 0..<10_000)) == 10_000)
            // Disabled after its deliveries were scheduled, before a parking pass moved them.
            try await database.client.query("UPDATE webhook_endpoints SET enabled = false WHERE id = \(disabled)", logger: logger)
            #expect(try await webhooks.enqueue(Self.deliveries(to: other, devices: 0..<10, project: Self.otherProjectId)) == 10)
            try await database.client.query("VACUUM ANALYZE deliveries", logger: logger)

            let claim = WebhookStore.claimStatement(
                limit: 64, perEndpoint: 16, owner: "a", lease: .seconds(60), gapHold: .seconds(60), excluding: [saturated])
            let plan = try await Self.plan(
                of: claim, options: "ANALYZE, BUFFERS", settings: WebhookStore.claimSettings, in: database, logger: logger)
            let claimed = plan["Actual Rows"] as? Int ?? -1
            let examined = Self.rowsExamined(in: plan, relation: "deliveries")
            #expect(claimed == 10, "claimed \(claimed)")
            // The ten taken, each checked (its head, its predecessor, its lock) a few times over,
            // and one step of the walk per endpoint; before, the 20,000 saturated ones were read.
            #expect(examined < 200, "the claim examined \(examined) rows of deliveries for \(claimed)")
        }
    }

    /// Every way a tenant can fill the due order at once: its failed deliveries replayed (a
    /// device's later ones waiting behind its first), a saturated endpoint the claimer holds
    /// enough of, a disabled endpoint with deliveries scheduled, deliveries held for a missing
    /// predecessor, an event twice in one queueing. Another tenant's due deliveries are all
    /// claimed by the next claim, and a claim never takes what is not its device's head.
    @Test func noTenantsQueueStarvesAnothersClaim() async throws {
        let logger = logger
        try await withProject { database, webhooks, saturated in
            let replaying = try await webhooks.addEndpoint(
                projectId: Self.projectId, url: "http://127.0.0.1:9/r", secrets: [WebhookSecret.generate()]
            ).id
            let disabled = try await webhooks.addEndpoint(
                projectId: Self.projectId, url: "http://127.0.0.1:9/d", secrets: [WebhookSecret.generate()]
            ).id
            let other = try await Self.otherTenantEndpoint(database, webhooks: webhooks, logger: logger)

            // Replayed: 300 devices' three failed deliveries each.
            let toReplay = Self.deliveries(to: replaying, devices: 0..<300, sequences: 1...3)
            #expect(try await webhooks.enqueue(toReplay) == toReplay.count)
            try await database.client.query(
                "UPDATE deliveries SET status = 'failed', next_attempt_at = 'infinity', lease_owner = NULL, leased_until = NULL WHERE endpoint_id = \(replaying)",
                logger: logger)
            var failedIds: [Int64] = []
            for try await id in try await database.client.query(
                "SELECT id FROM deliveries WHERE endpoint_id = \(replaying)", logger: logger
            ).decode(Int64.self) { failedIds.append(id) }
            #expect(try await webhooks.replay(deliveryIds: failedIds, projectId: Self.projectId).ids.count == 900)
            // Saturated, disabled, held for a gap (their first never came), and an event twice.
            #expect(try await webhooks.enqueue(Self.deliveries(to: saturated, devices: 0..<5000)) == 5000)
            #expect(try await webhooks.enqueue(Self.deliveries(to: disabled, devices: 0..<2000)) == 2000)
            try await database.client.query("UPDATE webhook_endpoints SET enabled = false WHERE id = \(disabled)", logger: logger)
            let gapped = Self.deliveries(to: replaying, devices: 1000..<1500, sequences: 2...2)
            #expect(try await webhooks.enqueue(gapped, gapHold: .seconds(600)) == 500)
            let twice = Self.deliveries(to: replaying, devices: 2000..<2100)
            #expect(try await webhooks.enqueue(twice + twice) == 100)

            // The other tenant's 40 due deliveries are all claimed by one claim with room for them.
            #expect(try await webhooks.enqueue(Self.deliveries(to: other, devices: 0..<40, project: Self.otherProjectId)) == 40)
            try await database.client.query("ANALYZE deliveries", logger: logger)
            let claimed = try await webhooks.claimDue(
                limit: 64, perEndpoint: 16, owner: "a", lease: .seconds(60), gapHold: .seconds(600), excluding: [saturated])
            let others = claimed.filter { $0.projectId == Self.otherProjectId }
            #expect(others.count == 16, "claimed \(others.count) of the other tenant's (16 at most of one endpoint)")
            // Nothing due is behind another of its device: the replay made only heads due, and each
            // event of the doubled queueing was queued once, due.
            var nonHeads = 0
            for try await count in try await database.client.query(
                """
                SELECT count(*)::int FROM deliveries d
                 WHERE d.status = 'pending' AND d.next_attempt_at < 'infinity'
                   AND EXISTS (SELECT 1 FROM deliveries e WHERE e.endpoint_id = d.endpoint_id AND e.device_id = d.device_id
                                 AND e.status = 'pending' AND e.sequence < d.sequence)
                """, logger: logger
            ).decode(Int.self) { nonHeads = count }
            #expect(nonHeads == 0, "\(nonHeads) deliveries are due behind another of their device")
            var dueTwice = 0
            for try await count in try await database.client.query(
                "SELECT count(*)::int FROM deliveries WHERE endpoint_id = \(replaying) AND event_id LIKE 'new-20__-1' AND next_attempt_at = 'infinity' AND status = 'pending' AND lease_owner IS NULL",
                logger: logger
            ).decode(Int.self) { dueTwice = count }
            #expect(dueTwice == 0, "\(dueTwice) events queued twice in one batch wait at 'infinity'")
            // The rest of the other tenant's follow in the next claims, 16 at a time.
            var taken = others.count
            for _ in 0..<3 where taken < 40 {
                taken += try await webhooks.claimDue(
                    limit: 64, perEndpoint: 16, owner: "b", lease: .seconds(60), gapHold: .seconds(600), excluding: [saturated]
                ).filter { $0.projectId == Self.otherProjectId }.count
            }
            #expect(taken == 40)
        }
    }

    /// A step of the expiring pass over disabled endpoints reads its step, not the disabled
    /// endpoint's backlog: of 20,000 pending deliveries none of which ran out, a step of 1,000
    /// examines about 1,000 (before, every pass read all 20,000); steps from where the last
    /// stopped fail every one once they ran out, each once.
    @Test func anExpiringStepReadsItsStepWhateverADisabledEndpointHolds() async throws {
        let logger = logger
        try await withProject { database, webhooks, endpointId in
            let backlog = Self.deliveries(to: endpointId, devices: 0..<2000, sequences: 1...10)
            #expect(try await webhooks.enqueue(backlog) == backlog.count)
            _ = try await webhooks.disableEndpoint(id: endpointId, reason: "operator")
            try await database.client.query("VACUUM ANALYZE deliveries", logger: logger)
            let step = WebhookStore.expiringStatement(retryWindow: .seconds(3600), after: nil, limit: 1000)
            let plan = try await Self.plan(of: step, options: "ANALYZE, BUFFERS", settings: [], in: database, logger: logger)
            let examined = Self.rowsExamined(in: plan, relation: "deliveries")
            #expect(examined <= 1100, "a step of 1,000 examined \(examined) rows of deliveries")
            let first = try await webhooks.failExpiredWhileDisabled(retryWindow: .seconds(3600), after: nil, reading: 1000)
            #expect(first.failed == 0 && first.next != nil)
            #expect(try await webhooks.failExpiredWhileDisabled(retryWindow: .zero, reading: 1000) == backlog.count)
            #expect(try await webhooks.failExpiredWhileDisabled(retryWindow: .zero, reading: 1000) == 0)
        }
    }

    static let otherProjectId = "q"

    /// A second project with one endpoint.
    static func otherTenantEndpoint(_ database: Database, webhooks: WebhookStore, logger: Logger) async throws -> String {
        try await ProjectStore(database: database, logger: logger).createProject(id: otherProjectId, name: "Other")
        return try await webhooks.addEndpoint(
            projectId: otherProjectId, url: "http://127.0.0.1:9/q", secrets: [WebhookSecret.generate()]
        ).id
    }

    static func deliveries(to endpointId: String, devices: Range<Int>, project: String) -> [NewDelivery] {
        deliveries(to: endpointId, devices: devices).map { delivery in
            var delivery = delivery
            delivery.projectId = project
            delivery.eventId = project + "-" + delivery.eventId
            return delivery
        }
    }

    /// The rows of `relation` that a plan run with ANALYZE examined: those its scans returned
    /// and those their filters removed, over all their loops.
    static func rowsExamined(in node: [String: Any], relation: String) -> Int {
        var count = 0
        if node["Relation Name"] as? String == relation {
            let loops = node["Actual Loops"] as? Int ?? 1
            let rows = (node["Actual Rows"] as? Int ?? 0) + (node["Rows Removed by Filter"] as? Int ?? 0)
                + (node["Rows Removed by Index Recheck"] as? Int ?? 0)
            count += rows * loops
        }
        for child in node["Plans"] as? [[String: Any]] ?? [] { count += rowsExamined(in: child, relation: relation) }
        return count
    }
}
