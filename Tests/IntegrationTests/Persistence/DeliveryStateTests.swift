import Foundation
import Logging
import Persistence
import PostgresNIO
import Shared
import Testing

/// Each state of a delivery, reached by the store's own statements and named by the database
/// (`delivery_states`), and the leases the database refuses. In a database of these tests' own:
/// claims are global.
@Suite(.serialized) struct DeliveryStateTests {
    let logger = Logger.forTests("test.delivery-states")

    static let ownDatabaseURL = Task<String, any Error> {
        var logger = Logger(label: "test.delivery-states")
        logger.logLevel = .warning
        return try await freshDatabaseURL(logger: logger)
    }

    @Test func theStatementsMoveADeliveryThroughTheStatesTheDatabaseNames() async throws {
        let logger = logger
        try await withMigratedDatabase(url: try await Self.ownDatabaseURL.value, logger: logger) { database in
            let projectId = "states-" + UUID().uuidString
            try await ProjectStore(database: database, logger: logger).createProject(id: projectId, name: "States")
            let webhooks = WebhookStore(database: database, logger: logger, sealer: SecretSealer(key: .generate()))
            let endpoint = try await webhooks.addEndpoint(
                projectId: projectId, url: "http://127.0.0.1:9/x", secrets: [WebhookSecret.generate()])
            func delivery(_ sequence: Int, device: String) -> NewDelivery {
                NewDelivery(
                    endpointId: endpoint.id, projectId: projectId, eventId: "\(projectId)-\(device)-\(sequence)",
                    eventType: sequence % 2 == 1 ? "checkin" : "checkout", deviceId: device, eventTime: Date(),
                    sequence: sequence, payload: "{}")
            }
            func result(_ attempt: ClaimedDelivery, _ outcome: DeliveryResult.Outcome) -> DeliveryResult {
                DeliveryResult(
                    deliveryId: attempt.id, attempt: attempt.attempt, startedAt: Date(), latency: .zero,
                    statusCode: outcome == .delivered ? 204 : 500, error: nil, outcome: outcome)
            }
            func ids() async throws -> [String: Int64] {
                var ids: [String: Int64] = [:]
                let rows = try await database.client.query(
                    "SELECT event_id, id FROM deliveries WHERE project_id = \(projectId)", logger: logger)
                for try await (event, id) in rows.decode((String, Int64).self) { ids[event] = id }
                return ids
            }

            try await webhooks.enqueue([delivery(1, device: "d"), delivery(2, device: "d"), delivery(1, device: "e")])
            let id = try await ids()
            let (d1, d2, e1) = (id["\(projectId)-d-1"]!, id["\(projectId)-d-2"]!, id["\(projectId)-e-1"]!)
            #expect(try await webhooks.states(of: [d1, d2, e1]) == [d1: .queued, d2: .behind, e1: .queued])

            let claimed = try await webhooks.claimDue(
                limit: 10, perEndpoint: 10, owner: "a", lease: .seconds(60), gapHold: .seconds(60))
            #expect(Set(claimed.map(\.id)) == [d1, e1])
            #expect(try await webhooks.states(of: [d1, d2, e1]) == [d1: .inFlight, d2: .behind, e1: .inFlight])

            let byId = Dictionary(uniqueKeysWithValues: claimed.map { ($0.id, $0) })
            try await webhooks.record(
                [result(byId[d1]!, .retry(after: .seconds(60))), result(byId[e1]!, .delivered)], owner: "a")
            #expect(try await webhooks.states(of: [d1, d2, e1]) == [d1: .retrying, d2: .behind, e1: .delivered])

            // A half lease, or a lease on a delivery no longer pending, is refused by the database.
            await #expect(throws: PSQLError.self) {
                try await database.client.perform("UPDATE deliveries SET lease_owner = 'x' WHERE id = \(d2)", logger: logger)
            }
            await #expect(throws: PSQLError.self) {
                try await database.client.perform(
                    "UPDATE deliveries SET lease_owner = 'x', leased_until = now() WHERE id = \(e1)", logger: logger)
            }

            _ = try await webhooks.disableEndpoint(id: endpoint.id, projectId: projectId, reason: "a test")
            #expect(try await webhooks.states(of: [d1, d2]) == [d1: .parked, d2: .parked])
            _ = try await webhooks.enableEndpoint(id: endpoint.id, projectId: projectId)
            try await database.client.perform(
                "UPDATE deliveries SET next_attempt_at = now() WHERE id = \(d1)", logger: logger)

            // Claimed for a moment only: its lease runs out before it is recorded.
            let short = try await webhooks.claimDue(
                limit: 10, perEndpoint: 10, owner: "b", lease: .milliseconds(300), gapHold: .seconds(60))
            #expect(short.map(\.id) == [d1])
            try await Task.sleep(for: .milliseconds(600))
            #expect(try await webhooks.states(of: [d1]) == [d1: .leaseLapsed])

            let again = try await webhooks.claimDue(
                limit: 10, perEndpoint: 10, owner: "b", lease: .seconds(60), gapHold: .seconds(60))
            #expect(again.isEmpty, "a lapsed lease is made due by the lease and mend passes, not by a claim")
            #expect(try await webhooks.releaseWaitingHeads(gapHold: .seconds(60)) == 1)
            let retaken = try await webhooks.claimDue(
                limit: 10, perEndpoint: 10, owner: "b", lease: .seconds(60), gapHold: .seconds(60))
            #expect(retaken.map(\.id) == [d1])
            try await webhooks.record([result(retaken[0], .failed)], owner: "b")
            #expect(try await webhooks.states(of: [d1, d2]) == [d1: .failed, d2: .queued])

            try await database.client.perform("DELETE FROM deliveries WHERE project_id = \(projectId)", logger: logger)
        }
    }
}
