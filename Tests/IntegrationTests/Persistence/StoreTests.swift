import Foundation
import Logging
import Persistence
import PostgresNIO
import Shared
import Testing

/// The stores against the real local Postgres. Serialized: claiming deliveries is
/// global, so two queue tests side by side would take each other's.
@Suite(.serialized) struct StoreTests {
    let logger: Logger = {
        var logger = Logger(label: "test.stores")
        logger.logLevel = .warning
        return logger
    }()

    /// A database of these tests' own: the pipeline tests running beside them have
    /// dispatchers that claim every due delivery, which would race the queue tests.
    static let ownDatabaseURL = Task<String, any Error> {
        let logger = {
            var logger = Logger(label: "test.stores")
            logger.logLevel = .warning
            return logger
        }()
        let name = "checkin_store_tests_\(UUID().uuidString.prefix(8).lowercased())"
        try await Database.withTemporaryClient(
            configuration: try DatabaseConfiguration(url: TestEnvironment.databaseURL), logger: logger
        ) { database in
            try await database.client.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"), logger: logger)
        }
        var components = try #require(URLComponents(string: TestEnvironment.databaseURL))
        components.path = "/" + name
        return try #require(components.string)
    }

    func withDatabase<T: Sendable>(_ body: @Sendable (Database) async throws -> T) async throws -> T {
        let logger = logger
        return try await Database.withTemporaryClient(
            configuration: try DatabaseConfiguration(url: try await Self.ownDatabaseURL.value), logger: logger
        ) { database in
            try await Migrator(database: database, logger: logger).migrate()
            return try await body(database)
        }
    }

    @Test func migratingTwiceAppliesNothingTheSecondTime() async throws {
        let logger = logger
        let again = try await withDatabase { database in try await Migrator(database: database, logger: logger).migrate() }
        #expect(again.isEmpty)
    }

    @Test func zonesRoundTripAndBumpTheCatalogVersion() async throws {
        let logger = logger
        let projectId = "zones-" + UUID().uuidString
        let document = ZonesDocument(zones: [
            ZoneDefinition(
                id: "a", name: "A", description: "first", customData: ["k": "v"], minimumRetriggerTime: 60,
                checkOutEnabled: true, conditions: ZoneConditions(minSpeed: 1, bearing: BearingRange(from: 350, to: 10)),
                activeSchedule: ActiveSchedule(
                    timeZone: "Europe/Paris", windows: [ScheduleWindow(days: [.monday, .friday], start: "22:00", end: "02:00")]),
                fences: [
                    FenceDefinition(id: "c", name: "circle", geometry: .point(Position(lon: 2.35, lat: 48.85)), radius: 75),
                    FenceDefinition(
                        id: "p",
                        geometry: .polygon([
                            [
                                Position(lon: 0, lat: 0), Position(lon: 1, lat: 0), Position(lon: 1, lat: 1), Position(lon: 0, lat: 0),
                            ]
                        ])),
                ],
                beacons: [BeaconDefinition(id: "b", uuid: "F7826DA6-4FA2-4E98-8024-BC5B71E0893E", major: 1, rssiThreshold: -70)]),
            ZoneDefinition(id: "b", name: "B", enabled: false),
        ])
        let (before, after, loaded) = try await withDatabase { database in
            let projects = ProjectStore(database: database, logger: logger)
            try await projects.createProject(id: projectId, name: "Zones")
            let zones = ZoneStore(database: database, logger: logger)
            let before = try await zones.catalogVersion()
            try await zones.replaceZones(projectId: projectId, with: document)
            let after = try await zones.catalogVersion()
            return (before, after, try await zones.zones(projectId: projectId))
        }
        #expect(after > before)
        #expect(loaded == document)
    }

    @Test func apiKeysResolveOnlyForTheirKind() async throws {
        let logger = logger
        let projectId = "keys-" + UUID().uuidString
        let (device, management, wrong) = try await withDatabase { database in
            let projects = ProjectStore(database: database, logger: logger)
            try await projects.createProject(id: projectId, name: "Keys")
            let key = try await projects.createKey(projectId: projectId, kind: .device)
            return (
                try await projects.project(forKey: key, kind: .device),
                try await projects.project(forKey: key, kind: .management),
                try await projects.project(forKey: key + "x", kind: .device)
            )
        }
        #expect(device == projectId)
        #expect(management == nil)
        #expect(wrong == nil)
    }

    @Test func deliveryQueueDropsDuplicatesLeasesRetriesAndReplays() async throws {
        let logger = logger
        let projectId = "hooks-" + UUID().uuidString
        try await withDatabase { database in
            try await ProjectStore(database: database, logger: logger).createProject(id: projectId, name: "Hooks")
            let webhooks = WebhookStore(database: database, logger: logger, sealer: SecretSealer(key: .generate()))
            let endpoint = try await webhooks.addEndpoint(
                projectId: projectId, url: "http://127.0.0.1:9/x", secrets: [WebhookSecret.generate()])
            let delivery = NewDelivery(
                endpointId: endpoint.id, projectId: projectId, eventId: "e-\(projectId)", eventType: "checkin", deviceId: "d",
                eventTime: Date(), payload: "{}")
            #expect(try await webhooks.enqueue([delivery]) == 1)
            #expect(try await webhooks.enqueue([delivery]) == 0)

            let claimed = try await webhooks.claimDue(limit: 1000, lease: .seconds(60)).filter { $0.eventId == delivery.eventId }
            #expect(claimed.count == 1)
            #expect(claimed.first?.attempt == 1)
            // Leased: not handed out again while the attempt runs.
            #expect(try await webhooks.claimDue(limit: 1000, lease: .seconds(60)).contains { $0.eventId == delivery.eventId } == false)

            try await webhooks.markAttemptFailed(
                id: claimed[0].id, statusCode: 500, error: "HTTP 500", retryAt: Date().addingTimeInterval(-1))
            let retried = try await webhooks.claimDue(limit: 1000, lease: .seconds(60)).filter { $0.eventId == delivery.eventId }
            #expect(retried.first?.attempt == 2)

            try await webhooks.markAttemptFailed(id: claimed[0].id, statusCode: nil, error: "gave up", retryAt: nil)
            #expect(try await webhooks.deliveries(projectId: projectId, status: .failed, limit: 10).map(\.eventId) == [delivery.eventId])
            #expect(try await webhooks.replay(deliveryId: claimed[0].id, projectId: projectId))
            #expect(try await webhooks.replay(deliveryId: claimed[0].id, projectId: "another-project") == false)
            let pending = try await webhooks.deliveries(projectId: projectId, status: .pending, limit: 10)
            #expect(pending.first?.attempts == 0)

            try await webhooks.markDelivered(id: claimed[0].id, statusCode: 204)
            #expect(try await webhooks.deliveries(projectId: projectId, status: .delivered, limit: 10).count == 1)
        }
    }

    @Test func checkOutWaitsForItsCheckInsDelivery() async throws {
        let logger = logger
        let projectId = "order-" + UUID().uuidString
        try await withDatabase { database in
            try await ProjectStore(database: database, logger: logger).createProject(id: projectId, name: "Order")
            let webhooks = WebhookStore(database: database, logger: logger, sealer: SecretSealer(key: .generate()))
            let endpoint = try await webhooks.addEndpoint(
                projectId: projectId, url: "http://127.0.0.1:9/x", secrets: [WebhookSecret.generate()])
            func delivery(_ id: String, type: String, checkInId: String?) -> NewDelivery {
                NewDelivery(
                    endpointId: endpoint.id, projectId: projectId, eventId: id, eventType: type, deviceId: "d",
                    eventTime: Date(), checkInId: checkInId, payload: "{}")
            }
            func claimedIds(hold: Duration = .seconds(60)) async throws -> [String] {
                try await webhooks.claimDue(limit: 1000, lease: .seconds(60), checkOutHold: hold)
                    .filter { $0.eventId.hasPrefix(projectId) }.map(\.eventId)
            }
            let checkInId = "\(projectId)-in"
            // The check-out is queued first; its check-in has not arrived.
            try await webhooks.enqueue([delivery("\(projectId)-out", type: "checkout", checkInId: checkInId)])
            #expect(try await claimedIds().isEmpty)

            try await webhooks.enqueue([delivery(checkInId, type: "checkin", checkInId: nil)])
            let first = try await webhooks.claimDue(limit: 1000, lease: .seconds(60)).filter { $0.eventId.hasPrefix(projectId) }
            #expect(first.map(\.eventId) == [checkInId])
            try await webhooks.markDelivered(id: try #require(first.first).id, statusCode: 200)
            #expect(try await claimedIds() == ["\(projectId)-out"])

            // A check-out whose check-in never comes to this endpoint goes once the hold is over.
            try await webhooks.enqueue([delivery("\(projectId)-orphan", type: "checkout", checkInId: "\(projectId)-never")])
            #expect(try await claimedIds().isEmpty)
            #expect(try await claimedIds(hold: .zero) == ["\(projectId)-orphan"])
        }
    }

    @Test func offsetsNeverMoveBackwards() async throws {
        let logger = logger
        let group = "group-" + UUID().uuidString
        let offsets = try await withDatabase { database in
            let store = OffsetStore(database: database, logger: logger)
            try await database.withTransaction { connection in
                try await store.save(group: group, offsets: [("t", 0, 10), ("t", 1, 5)], on: connection)
            }
            try await database.withTransaction { connection in
                try await store.save(group: group, offsets: [("t", 0, 7), ("t", 1, 6)], on: connection)
            }
            return try await store.nextOffsets(group: group, topic: "t", partitions: [0, 1, 2])
        }
        #expect(offsets == [0: 10, 1: 6])
    }
}
