import Foundation
import Logging
import Persistence
import PostgresNIO
import Shared
import Testing

/// Each event's body is kept once (`event_payloads`), however many endpoints it goes to,
/// for as long as one of its deliveries is: against the real local Postgres, in a database
/// of these tests' own (a retention pass deletes whatever is old enough).
@Suite(.serialized) struct EventPayloadTests {
    let logger = Logger.forTests("test.event-payloads")

    static let ownDatabaseURL = Task<String, any Error> {
        var logger = Logger(label: "test.event-payloads")
        logger.logLevel = .warning
        return try await freshDatabaseURL(logger: logger)
    }

    /// A project with `endpoints` endpoints.
    func project(
        _ database: Database, endpoints: Int, key: SecretEncryptionKey = .generate()
    ) async throws -> (projectId: String, webhooks: WebhookStore, endpointIds: [String]) {
        let projectId = "payloads-" + UUID().uuidString
        try await ProjectStore(database: database, logger: logger).createProject(id: projectId, name: "Payloads")
        let webhooks = WebhookStore(database: database, logger: logger, sealer: SecretSealer(key: key))
        var ids: [String] = []
        for index in 0..<endpoints {
            ids.append(
                try await webhooks.addEndpoint(
                    projectId: projectId, url: "http://127.0.0.1:9/\(index)", secrets: [WebhookSecret.generate()]
                ).id)
        }
        return (projectId, webhooks, ids)
    }

    /// Every delivery of each event (one per endpoint), with the event's own body.
    static func deliveries(projectId: String, endpointIds: [String], events: Range<Int>) -> [NewDelivery] {
        events.flatMap { event in
            endpointIds.map { endpointId in
                NewDelivery(
                    endpointId: endpointId, projectId: projectId, eventId: "\(projectId)-\(event)", eventType: "checkin",
                    deviceId: "device-\(event)", eventTime: Date(), sequence: nil, payload: "{\"event\":\(event)}")
            }
        }
    }

    func keptBodies(of projectId: String, in database: Database) async throws -> [String: String] {
        var bodies: [String: String] = [:]
        let rows = try await database.client.query(
            "SELECT event_id, payload FROM event_payloads WHERE project_id = \(projectId)", logger: logger)
        for try await (eventId, payload) in rows.decode((String, String).self) { bodies[eventId] = payload }
        return bodies
    }

    /// Records the deliveries as delivered, for `owner`.
    func deliver(_ attempts: [ClaimedDelivery], webhooks: WebhookStore, owner: String) async throws {
        try await webhooks.record(
            attempts.map {
                DeliveryResult(
                    deliveryId: $0.id, attempt: $0.attempt, startedAt: Date(), latency: .milliseconds(1), statusCode: 204,
                    error: nil, outcome: .delivered)
            }, owner: owner)
    }

    /// Ten events to ten endpoints: ten bodies kept, and each of the hundred deliveries,
    /// whether taken by its queueing or by a claim, sends its event's body.
    @Test func anEventToTenEndpointsKeepsItsBodyOnceAndEachDeliverySendsIt() async throws {
        let logger = logger
        try await withMigratedDatabase(url: try await Self.ownDatabaseURL.value, logger: logger) { database in
            let (projectId, webhooks, endpointIds) = try await project(database, endpoints: 10)
            let queued = Self.deliveries(projectId: projectId, endpointIds: endpointIds, events: 0..<10)
            let (count, taken, _) = try await webhooks.enqueue(
                queued, claim: WebhookStore.QueueClaim(owner: "a", lease: .seconds(60), limit: 40))
            #expect(count == 100 && taken.count == 40)
            let claimed = try await webhooks.claimDue(
                limit: 100, perEndpoint: 100, owner: "a", lease: .seconds(60), gapHold: .zero
            ).filter { $0.projectId == projectId }
            #expect(claimed.count == 60)

            let bodies = try await keptBodies(of: projectId, in: database)
            #expect(bodies.count == 10)
            let sent = taken + claimed
            #expect(Set(sent.map(\.id)).count == 100)
            #expect(sent.allSatisfy { $0.payload == bodies[$0.eventId] && $0.payload?.hasPrefix("{\"event\":") == true })
        }
    }

    /// Retention deletes an event's body with its last delivery: while one endpoint's
    /// delivery is still pending the body stays; once it too is delivered and purged, it goes.
    @Test func retentionDeletesABodyWithItsLastDelivery() async throws {
        let logger = logger
        try await withMigratedDatabase(url: try await Self.ownDatabaseURL.value, logger: logger) { database in
            let (projectId, webhooks, endpointIds) = try await project(database, endpoints: 2)
            try await webhooks.enqueue(Self.deliveries(projectId: projectId, endpointIds: endpointIds, events: 0..<3))
            let claimed = try await webhooks.claimDue(
                limit: 100, perEndpoint: 100, owner: "a", lease: .seconds(60), gapHold: .zero
            ).filter { $0.projectId == projectId }
            #expect(claimed.count == 6)
            // All of the first endpoint's, and event 0's to the second: events 1 and 2 still wait there.
            let first = claimed.filter { $0.endpointId == endpointIds[0] || $0.eventId == "\(projectId)-0" }
            try await deliver(first, webhooks: webhooks, owner: "a")
            let later = Date().addingTimeInterval(3 * 86_400)
            #expect(try await webhooks.purgeDelivered(olderThan: .seconds(86_400), now: later) >= 4)
            #expect(try await keptBodies(of: projectId, in: database).keys.sorted() == ["\(projectId)-1", "\(projectId)-2"])

            try await deliver(claimed.filter { !first.map(\.id).contains($0.id) }, webhooks: webhooks, owner: "a")
            #expect(try await webhooks.purgeDelivered(olderThan: .seconds(86_400), now: later) >= 2)
            #expect(try await keptBodies(of: projectId, in: database).isEmpty)
        }
    }

    /// Removing an endpoint deletes the bodies of events queued for it alone, and keeps
    /// those another endpoint still has deliveries of.
    @Test func removingAnEndpointDeletesTheBodiesOnlyItNeeded() async throws {
        let logger = logger
        try await withMigratedDatabase(url: try await Self.ownDatabaseURL.value, logger: logger) { database in
            let (projectId, webhooks, endpointIds) = try await project(database, endpoints: 2)
            try await webhooks.enqueue(
                Self.deliveries(projectId: projectId, endpointIds: endpointIds, events: 0..<2)
                    + Self.deliveries(projectId: projectId, endpointIds: [endpointIds[0]], events: 2..<4))
            #expect(try await keptBodies(of: projectId, in: database).count == 4)

            #expect(try await webhooks.removeEndpoint(id: endpointIds[0], projectId: projectId))
            let kept = try await keptBodies(of: projectId, in: database)
            #expect(kept.keys.sorted() == ["\(projectId)-0", "\(projectId)-1"])
            let claimed = try await webhooks.claimDue(
                limit: 100, perEndpoint: 100, owner: "a", lease: .seconds(60), gapHold: .zero
            ).filter { $0.projectId == projectId }
            #expect(claimed.compactMap(\.payload).sorted() == ["{\"event\":0}", "{\"event\":1}"])
        }
    }

    /// A database with deliveries from before the bodies were kept apart: migrating moves
    /// each event's body out of its deliveries, once, and the deliveries still send it.
    @Test func migratingKeepsTheBodiesOfQueuedDeliveries() async throws {
        let logger = logger
        let url = try await freshDatabaseURL(logger: logger)
        let key = SecretEncryptionKey.generate()
        let projectId = try await withMigratedDatabase(
            url: url, migrations: Migration.all.filter { $0.version < 27 }, logger: logger
        ) { database in
            let (projectId, _, endpointIds) = try await project(database, endpoints: 2, key: key)
            try await database.client.query(
                """
                INSERT INTO deliveries (endpoint_id, project_id, event_id, event_type, device_id, event_time, payload)
                SELECT e.id, \(projectId), 'event-' || g, 'checkin', 'device-' || g, now(), '{"event":' || g || '}'
                  FROM generate_series(1, 5) g, UNNEST(\(endpointIds)::text[]) AS e(id)
                """, logger: logger)
            return projectId
        }
        try await withMigratedDatabase(url: url, logger: logger) { database in
            let bodies = try await keptBodies(of: projectId, in: database)
            #expect(bodies.count == 5)
            #expect(bodies["event-3"] == "{\"event\":3}")
            let webhooks = WebhookStore(database: database, logger: logger, sealer: SecretSealer(key: key))
            let claimed = try await webhooks.claimDue(
                limit: 100, perEndpoint: 100, owner: "a", lease: .seconds(60), gapHold: .zero)
            #expect(claimed.count == 10)
            #expect(claimed.allSatisfy { $0.payload == bodies[$0.eventId] })
        }
    }
}
