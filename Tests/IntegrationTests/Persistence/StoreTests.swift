import Foundation
import Geofence
import Logging
import Persistence
import PostgresNIO
import Shared
import Synchronization
import Testing

/// The stores against the real local Postgres. Serialized: claiming deliveries is
/// global, so two queue tests side by side would take each other's.
@Suite(.serialized) struct StoreTests {
    let logger = Logger.forTests("test.stores")

    /// A database of these tests' own: the pipeline tests running beside them have
    /// dispatchers that claim every due delivery, which would race the queue tests.
    static let ownDatabaseURL = Task<String, any Error> {
        var logger = Logger(label: "test.stores")
        logger.logLevel = .warning
        return try await freshDatabaseURL(logger: logger)
    }

    func withDatabase<T: Sendable>(_ body: @Sendable (Database) async throws -> T) async throws -> T {
        try await withMigratedDatabase(url: try await Self.ownDatabaseURL.value, logger: logger, body)
    }

    /// A new project with one endpoint (which nothing answers), and the store its deliveries go through.
    static func projectWithEndpoint(_ projectId: String, name: String, database: Database, logger: Logger) async throws
        -> (WebhookStore, WebhookEndpoint)
    {
        try await ProjectStore(database: database, logger: logger).createProject(id: projectId, name: name)
        let webhooks = WebhookStore(database: database, logger: logger, sealer: SecretSealer(key: .generate()))
        let endpoint = try await webhooks.addEndpoint(
            projectId: projectId, url: "http://127.0.0.1:9/x", secrets: [WebhookSecret.generate()])
        return (webhooks, endpoint)
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
            let before = try await zones.versions().catalog
            try await zones.replaceZones(projectId: projectId, with: document)
            let after = try await zones.versions().catalog
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
            let key = try await projects.issueKey(projectId: projectId, kind: .device).key
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
            let (webhooks, endpoint) = try await Self.projectWithEndpoint(projectId, name: "Hooks", database: database, logger: logger)
            let delivery = NewDelivery(
                endpointId: endpoint.id, projectId: projectId, eventId: "e-\(projectId)", eventType: "checkin", deviceId: "d",
                eventTime: Date(), sequence: 1, payload: "{}")
            #expect(try await webhooks.enqueue([delivery]) == 1)
            #expect(try await webhooks.enqueue([delivery]) == 0)
            func claim(owner: String = "a") async throws -> [ClaimedDelivery] {
                try await webhooks.claimDue(limit: 1000, perEndpoint: 1000, owner: owner, lease: .seconds(60), gapHold: .seconds(60))
                    .filter { $0.eventId == delivery.eventId }
            }
            func result(_ attempt: ClaimedDelivery, _ code: Int?, _ outcome: DeliveryResult.Outcome) -> DeliveryResult {
                DeliveryResult(
                    deliveryId: attempt.id, attempt: attempt.attempt, startedAt: Date(), latency: .nanoseconds(2_014_953),
                    statusCode: code, error: code == 204 ? nil : "HTTP \(code ?? 0)", outcome: outcome)
            }

            let claimed = try await claim()
            #expect(claimed.count == 1)
            #expect(claimed.first?.attempt == 1)
            // Leased: not handed out again, to this notifier or another, while the attempt runs.
            #expect(try await claim(owner: "b").isEmpty)
            // Only the lease holder records a result.
            try await webhooks.record([result(claimed[0], 204, .delivered)], owner: "b")
            #expect(try await webhooks.deliveries(projectId: projectId, filter: .status(.pending), before: nil, limit: 10).deliveries.count == 1)

            try await webhooks.record([result(claimed[0], 500, .retry(after: .zero))], owner: "a")
            let retried = try await claim()
            #expect(retried.first?.attempt == 2)

            try await webhooks.record([result(retried[0], 503, .failed)], owner: "a")
            #expect(try await webhooks.deliveries(projectId: projectId, filter: .status(.failed), before: nil, limit: 10).deliveries.map(\.eventId) == [delivery.eventId])
            #expect(try await webhooks.replay(deliveryIds: [claimed[0].id], projectId: projectId).ids == [claimed[0].id])
            #expect(try await webhooks.replay(deliveryIds: [claimed[0].id], projectId: "another-project").ids.isEmpty)
            let pending = try await webhooks.deliveries(projectId: projectId, filter: .status(.pending), before: nil, limit: 10).deliveries
            #expect(pending.first?.attempts == 0)

            // Given back unattempted: due again at once, the attempt not charged.
            let again = try await claim()
            try await webhooks.releaseLeases(ids: again.map(\.id), owner: "a")
            let third = try await claim()
            #expect(third.first?.attempt == 1)
            try await webhooks.record([result(third[0], 204, .delivered)], owner: "a")
            #expect(try await webhooks.deliveries(projectId: projectId, filter: .status(.delivered), before: nil, limit: 10).deliveries.count == 1)

            // Every attempt made is logged, also the one whose result came too late to count.
            let detail = try #require(try await webhooks.delivery(id: claimed[0].id, projectId: projectId))
            #expect(detail.attemptLog.map(\.statusCode) == [204, 500, 503, 204])
            #expect(detail.attemptLog.map(\.attempt) == [1, 1, 2, 1])
            // The replay began a second round: its "attempt 1" is told apart from the first.
            #expect(detail.attemptLog.map(\.round) == [1, 1, 1, 2])
            #expect(detail.replays.count == 1)
            // Latencies to a tenth of a millisecond, not 2.0149529999999998.
            #expect(detail.attemptLog.map(\.latencyMilliseconds) == [2.0, 2.0, 2.0, 2.0])
            #expect(try await webhooks.delivery(id: claimed[0].id, projectId: "another-project") == nil)
        }
    }

    /// Most deliveries take one attempt: the one that finishes a delivery is kept on its row,
    /// not in a row of the attempt log, and the log still lists it; a replay moves it to the
    /// log before the next round.
    @Test func theAttemptThatFinishesADeliveryIsKeptOnItsRow() async throws {
        let logger = logger
        let projectId = "finishing-" + UUID().uuidString
        try await withDatabase { database in
            let (webhooks, endpoint) = try await Self.projectWithEndpoint(projectId, name: "Finishing", database: database, logger: logger)
            let deliveries = (1...2).map { device in
                NewDelivery(
                    endpointId: endpoint.id, projectId: projectId, eventId: "\(projectId)-\(device)", eventType: "checkin",
                    deviceId: "d\(device)", eventTime: Date(), sequence: 1, payload: "{}")
            }
            #expect(try await webhooks.enqueue(deliveries) == 2)
            func claim() async throws -> [ClaimedDelivery] {
                try await webhooks.claimDue(limit: 1000, perEndpoint: 1000, owner: "a", lease: .seconds(60), gapHold: .zero)
                    .filter { $0.projectId == projectId }.sorted { $0.eventId < $1.eventId }
            }
            func logRows() async throws -> Int {
                try await database.client.query(
                    """
                    SELECT count(*)::int FROM delivery_attempts a JOIN deliveries d ON d.id = a.delivery_id
                     WHERE d.project_id = \(projectId)
                    """, logger: logger
                ).decode(Int.self).reduce(0, +)
            }
            let startedAt = Date(timeIntervalSince1970: 1_800_000_000)
            let claimed = try await claim()
            try #require(claimed.count == 2)
            try await webhooks.record(
                [
                    DeliveryResult(
                        deliveryId: claimed[0].id, attempt: 1, startedAt: startedAt, latency: .milliseconds(12),
                        statusCode: 204, error: nil, outcome: .delivered),
                    DeliveryResult(
                        deliveryId: claimed[1].id, attempt: 1, startedAt: startedAt, latency: .milliseconds(30),
                        statusCode: 410, error: "HTTP 410", outcome: .failed),
                ], owner: "a")
            #expect(try await logRows() == 0)
            func described(_ log: [DeliveryAttemptRecord]) -> [String] {
                log.map {
                    "\($0.round).\($0.attempt) \($0.startedAt.timeIntervalSince1970) \($0.latencyMilliseconds) ms "
                        + "\($0.statusCode ?? 0) \($0.error ?? "-")"
                }
            }
            let delivered = try #require(try await webhooks.delivery(id: claimed[0].id, projectId: projectId))
            #expect(described(delivered.attemptLog) == ["1.1 1800000000.0 12.0 ms 204 -"])
            let failed = try #require(try await webhooks.delivery(id: claimed[1].id, projectId: projectId))
            #expect(described(failed.attemptLog) == ["1.1 1800000000.0 30.0 ms 410 HTTP 410"])

            // Replayed: the finishing attempt moves to the log, and the next round's is on the row.
            #expect(try await webhooks.replayFailed(projectId: projectId).ids == [claimed[1].id])
            #expect(try await logRows() == 1)
            let again = try await claim()
            #expect(again.map(\.id) == [claimed[1].id])
            try await webhooks.record(
                [
                    DeliveryResult(
                        deliveryId: claimed[1].id, attempt: 1, startedAt: startedAt + 60, latency: .milliseconds(5),
                        statusCode: 204, error: nil, outcome: .delivered)
                ], owner: "a")
            let replayed = try #require(try await webhooks.delivery(id: claimed[1].id, projectId: projectId))
            #expect(described(replayed.attemptLog) == ["1.1 1800000000.0 30.0 ms 410 HTTP 410", "2.1 1800000060.0 5.0 ms 204 -"])
            #expect(try await logRows() == 1)
        }
    }

    /// A device's deliveries to an endpoint leave one at a time in `sequence` order; a gap
    /// (an event not queued yet) is waited for up to the hold; a disabled endpoint's wait.
    @Test func deliveriesOfADeviceLeaveInSequenceOrder() async throws {
        let logger = logger
        let projectId = "order-" + UUID().uuidString
        try await withDatabase { database in
            let (webhooks, endpoint) = try await Self.projectWithEndpoint(projectId, name: "Order", database: database, logger: logger)
            func delivery(_ sequence: Int, device: String = "d") -> NewDelivery {
                NewDelivery(
                    endpointId: endpoint.id, projectId: projectId, eventId: "\(projectId)-\(device)-\(sequence)",
                    eventType: sequence % 2 == 1 ? "checkin" : "checkout", deviceId: device, eventTime: Date(),
                    sequence: sequence, payload: "{}")
            }
            func claim(hold: Duration = .seconds(60)) async throws -> [ClaimedDelivery] {
                try await webhooks.claimDue(limit: 1000, perEndpoint: 1000, owner: "a", lease: .seconds(60), gapHold: hold)
                    .filter { $0.projectId == projectId }
            }
            func finish(_ attempts: [ClaimedDelivery], _ outcome: DeliveryResult.Outcome) async throws {
                try await webhooks.record(
                    attempts.map {
                        DeliveryResult(
                            deliveryId: $0.id, attempt: $0.attempt, startedAt: Date(), latency: .zero, statusCode: 500,
                            error: "HTTP 500", outcome: outcome)
                    }, owner: "a")
            }
            // Queued out of order, as the two event topics allow; sequence 2 has not arrived.
            try await webhooks.enqueue([delivery(3), delivery(1), delivery(4)])
            let first = try await claim()
            #expect(first.map(\.sequence) == [1])
            // While 1 is retrying, nothing after it goes.
            try await finish(first, .retry(after: .zero))
            let retry = try await claim()
            #expect(retry.map(\.sequence) == [1])
            try await finish(retry, .failed)
            // 1 failed for good; 3 waits for the missing 2 ...
            #expect(try await claim().isEmpty)
            // ... and goes without it once the hold is over, counted as skipping a gap.
            let skipped = try await claim(hold: .zero)
            #expect(skipped.map(\.sequence) == [3])
            #expect(skipped.first?.skippedGap == true)
            try await finish(skipped, .retry(after: .zero))
            // 2 arrives late; it is earlier than 3, which now waits for it.
            try await webhooks.enqueue([delivery(2)])
            let late = try await claim()
            #expect(late.map(\.sequence) == [2])
            #expect(late.first?.skippedGap == false)

            // Another device is not held up by this one.
            try await webhooks.enqueue([delivery(1, device: "other")])
            #expect(try await claim().map(\.deviceId) == ["other"])

            // A disabled endpoint's deliveries wait, and fail once their retries would have run out.
            _ = try await webhooks.disableEndpoint(id: endpoint.id, reason: "test")
            try await finish(late, .retry(after: .zero))
            #expect(try await claim().isEmpty)
            #expect(try await webhooks.failExpiredWhileDisabled(retryWindow: .seconds(3600)) == 0)
            #expect(try await webhooks.failExpiredWhileDisabled(retryWindow: .zero) == 4)
            let failedSequences = try await webhooks.deliveries(projectId: projectId, filter: .status(.failed), before: nil, limit: 10).deliveries
                .compactMap(\.sequence)
            #expect(Set(failedSequences) == [1, 2, 3, 4])

            // Replayed together, they go in sequence order again.
            let failed = try await webhooks.deliveries(projectId: projectId, filter: .status(.failed), before: nil, limit: 10).deliveries
            try await database.client.query(
                "UPDATE webhook_endpoints SET enabled = true WHERE id = \(endpoint.id)", logger: logger)
            #expect(try await webhooks.replay(deliveryIds: failed.map(\.id), projectId: projectId).ids.count == 5)
            #expect(try await claim().filter { $0.deviceId == "d" }.map(\.sequence) == [1])
        }
    }

    /// Queueing, recording and the claims a recording makes of each device's next delivery,
    /// all at once as in a busy notifier: every delivery goes without the 15-second mend.
    /// (Queueing that locked only the deliveries not waiting behind another left some waiting
    /// for good: a waiting one could be taken and recorded between its lock and its judging.)
    @Test func deliveriesQueuedWhileTheirPredecessorsAreRecordedAllGo() async throws {
        let logger = logger
        let projectId = "busy-" + UUID().uuidString
        let (devices, sequences) = (100, 8)
        let delivered = try await withDatabase { database in
            let (webhooks, endpoint) = try await Self.projectWithEndpoint(
                projectId, name: "Busy", database: database, logger: logger)
            let toRecord = Mutex<[ClaimedDelivery]>([])
            let queueing = Task {
                for sequence in 1...sequences {
                    let (_, claimed, _) = try await webhooks.enqueue(
                        (0..<devices).map { device in
                            NewDelivery(
                                endpointId: endpoint.id, projectId: projectId, eventId: "\(projectId)-\(device)-\(sequence)",
                                eventType: sequence % 2 == 1 ? "checkin" : "checkout", deviceId: "d\(device)", eventTime: Date(),
                                sequence: sequence, payload: "{}")
                        }, gapHold: .seconds(60), claim: .init(owner: "a", lease: .seconds(60), limit: 10_000))
                    toRecord.withLock { $0 += claimed }
                }
            }
            let queueingDone = Mutex(false)
            // Records what was taken as delivered, which takes each device's next one, until
            // nothing is left to record (and, with `untilQueued`, everything was queued).
            let recordAll: @Sendable (_ untilQueued: Bool) async throws -> Void = { untilQueued in
                while true {
                    let batch = toRecord.withLock { taken in
                        defer { taken = Array(taken.dropFirst(50)) }
                        return Array(taken.prefix(50))
                    }
                    if batch.isEmpty {
                        if !untilQueued || queueingDone.withLock({ $0 }) { return }
                        try await Task.sleep(for: .milliseconds(1))
                        continue
                    }
                    let next = try await webhooks.record(
                        batch.map {
                            DeliveryResult(
                                deliveryId: $0.id, attempt: $0.attempt, startedAt: Date(), latency: .zero, statusCode: 204,
                                error: nil, outcome: .delivered)
                        }, owner: "a", chainLease: .seconds(60), gapHold: .seconds(60))
                    toRecord.withLock { $0 += next }
                }
            }
            async let first: Void = recordAll(true)
            async let second: Void = recordAll(true)
            try await queueing.value
            queueingDone.withLock { $0 = true }
            try await first
            try await second
            // What is due now but was not taken goes by claims, as the notifier's would take it.
            while true {
                let claimed = try await webhooks.claimDue(limit: 1000, perEndpoint: 1000, owner: "a", lease: .seconds(60), gapHold: .seconds(60))
                    .filter { $0.projectId == projectId }
                if claimed.isEmpty { break }
                toRecord.withLock { $0 += claimed }
                try await recordAll(false)
            }
            let rows = try await database.client.query(
                "SELECT count(*) FROM deliveries WHERE project_id = \(projectId) AND status = 'delivered'", logger: logger)
            var count = 0
            for try await value in rows.decode(Int.self) { count = value }
            return count
        }
        #expect(delivered == devices * sequences)
    }

    /// An endpoint removed while one of its deliveries is in flight takes the delivery with
    /// it: recording that attempt's result afterwards finds nothing to record, and fails
    /// nothing else of its batch (it used to log the attempt of a delivery that was gone).
    /// Removing an endpoint while its events are being queued: the queueing locks the devices'
    /// deliveries and then the endpoint (the new rows' reference); the removal must not hold
    /// the endpoint while it waits for those deliveries, or one of the two fails (deadlock).
    @Test func anEndpointRemovedWhileItsEventsAreQueuedIsRemoved() async throws {
        let logger = logger
        let projectId = "queueing-" + UUID().uuidString
        let (removed, queueingErrors) = try await withDatabase { database in
            let (webhooks, endpoint) = try await Self.projectWithEndpoint(projectId, name: "Queueing", database: database, logger: logger)
            let devices = 2000
            func batch(_ sequence: Int) -> [NewDelivery] {
                (0..<devices).map { device in
                    NewDelivery(
                        endpointId: endpoint.id, projectId: projectId, eventId: "\(projectId)-\(device)-\(sequence)",
                        eventType: "checkin", deviceId: "device-\(device)", eventTime: Date(), sequence: sequence, payload: "{}")
                }
            }
            // Every device has deliveries waiting, which each queueing locks.
            try await webhooks.enqueue(batch(1))
            let queueing = Task {
                var errors: [String] = []
                var sequence = 2
                while !Task.isCancelled {
                    do {
                        try await webhooks.enqueue(batch(sequence))
                        sequence += 1
                    } catch {
                        errors.append(String(reflecting: error))
                        break
                    }
                }
                return errors
            }
            try await Task.sleep(for: .milliseconds(300))
            let removal: String
            do {
                removal = try await webhooks.removeEndpoint(id: endpoint.id, projectId: projectId) ? "removed" : "not found"
            } catch {
                removal = String(reflecting: error)
            }
            queueing.cancel()
            return (removal, await queueing.value)
        }
        #expect(removed == "removed")
        // Once it is removed, queueing for it fails on its reference, and on nothing else.
        #expect(queueingErrors.allSatisfy { !$0.contains("40P01") }, "\(queueingErrors)")
    }

    @Test func aResultForADeliveryRemovedMeanwhileIsDropped() async throws {
        let logger = logger
        let projectId = "removed-" + UUID().uuidString
        let outcome = try await withDatabase { database in
            let (webhooks, endpoint) = try await Self.projectWithEndpoint(projectId, name: "Removed", database: database, logger: logger)
            try await webhooks.enqueue([
                NewDelivery(
                    endpointId: endpoint.id, projectId: projectId, eventId: "\(projectId)-1", eventType: "checkin",
                    deviceId: "d", eventTime: Date(), sequence: 1, payload: "{}")
            ])
            let attempt = try #require(
                try await webhooks.claimDue(limit: 1000, perEndpoint: 1000, owner: "a", lease: .seconds(60), gapHold: .zero)
                    .first { $0.projectId == projectId })
            // The removal has deleted the delivery but not committed when the result comes.
            let (removed, removedContinuation) = AsyncStream.makeStream(of: Void.self)
            let (commit, commitContinuation) = AsyncStream.makeStream(of: Void.self)
            let removal = Task {
                try await database.withTransaction { connection in
                    try await connection.query("DELETE FROM webhook_endpoints WHERE id = \(endpoint.id)", logger: logger)
                    removedContinuation.yield()
                    for await _ in commit { break }
                }
            }
            for await _ in removed { break }
            let recording = Task {
                try await webhooks.record(
                    [
                        DeliveryResult(
                            deliveryId: attempt.id, attempt: attempt.attempt, startedAt: Date(), latency: .zero, statusCode: 204,
                            error: nil, outcome: .delivered)
                    ], owner: "a")
            }
            // Commit once the recording waits for the removal's locks.
            for _ in 0..<200 {
                let rows = try await database.client.query(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
                    logger: logger)
                var waiting = 0
                for try await count in rows.decode(Int.self) { waiting = count }
                if waiting > 0 { break }
                try await Task.sleep(for: .milliseconds(50))
            }
            commitContinuation.finish()
            try await removal.value
            let result = await recording.result
            let attempts = try await database.client.query(
                "SELECT count(*) FROM delivery_attempts WHERE delivery_id = \(attempt.id)", logger: logger)
            var logged = -1
            for try await count in attempts.decode(Int.self) { logged = count }
            return (result.map(\.count), logged)
        }
        switch outcome.0 {
        case .success(let chained): #expect(chained == 0)
        case .failure(let error): Issue.record("the result was not recorded: \(String(reflecting: error))")
        }
        #expect(outcome.1 == 0)
    }

    /// Recording a delivery as done claims the device's very next one for the same owner
    /// and hands it back; a retry, a gap or a disabled endpoint claims nothing.
    @Test func aResultClaimsTheDevicesNextDeliveryOnlyWhenItIsTheVeryNext() async throws {
        let logger = logger
        let projectId = "chain-" + UUID().uuidString
        try await withDatabase { database in
            try await ProjectStore(database: database, logger: logger).createProject(id: projectId, name: "Chain")
            let webhooks = WebhookStore(database: database, logger: logger, sealer: SecretSealer(key: .generate()))
            let secret = WebhookSecret.generate()
            let endpoint = try await webhooks.addEndpoint(projectId: projectId, url: "http://127.0.0.1:9/x", secrets: [secret])
            func delivery(_ sequence: Int) -> NewDelivery {
                NewDelivery(
                    endpointId: endpoint.id, projectId: projectId, eventId: "\(projectId)-\(sequence)", eventType: "checkin",
                    deviceId: "d", eventTime: Date(), sequence: sequence, payload: "{\"n\":\(sequence)}")
            }
            func claim(owner: String = "a", hold: Duration = .seconds(60)) async throws -> [ClaimedDelivery] {
                try await webhooks.claimDue(limit: 1000, perEndpoint: 1000, owner: owner, lease: .seconds(60), gapHold: hold)
                    .filter { $0.projectId == projectId }
            }
            func finish(_ attempt: ClaimedDelivery, _ outcome: DeliveryResult.Outcome) async throws -> [ClaimedDelivery] {
                try await webhooks.record(
                    [
                        DeliveryResult(
                            deliveryId: attempt.id, attempt: attempt.attempt, startedAt: Date(), latency: .zero,
                            statusCode: outcome == .delivered ? 204 : 500, error: nil, outcome: outcome)
                    ], owner: "a", chainLease: .seconds(60))
            }
            // 1, 2, 3 and 5: 4 has not arrived.
            try await webhooks.enqueue([delivery(1), delivery(2), delivery(3), delivery(5)])
            let first = try await claim()
            #expect(first.map(\.sequence) == [1])

            // Delivered: 2 comes back claimed, ready to send, and no claim sees it.
            let second = try await finish(first[0], .delivered)
            #expect(second.map(\.sequence) == [2])
            #expect(second.first?.attempt == 1)
            #expect(second.first?.payload == "{\"n\":2}")
            #expect(second.first?.sealedSecrets.map { try? webhooks.sealer.open($0) } == [secret])
            #expect(try await claim(owner: "b").isEmpty)

            // A retry claims nothing, and 3 stays behind it.
            #expect(try await finish(second[0], .retry(after: .zero)).isEmpty)
            let retried = try await claim()
            #expect(retried.map(\.sequence) == [2])
            #expect(retried.first?.attempt == 2)

            // Failed for good: 3 is the very next, claimed.
            let third = try await finish(retried[0], .failed)
            #expect(third.map(\.sequence) == [3])

            // 4 is missing: 5 is not claimed with 3's result; it waits for the gap hold.
            #expect(try await finish(third[0], .delivered).isEmpty)
            #expect(try await claim().isEmpty)
            let fifth = try await claim(hold: .zero)
            #expect(fifth.map(\.sequence) == [5])
            #expect(fifth.first?.skippedGap == true)

            // A disabled endpoint's next delivery is not claimed either.
            try await webhooks.enqueue([delivery(6)])
            _ = try await webhooks.disableEndpoint(id: endpoint.id, reason: "test")
            #expect(try await finish(fifth[0], .delivered).isEmpty)
            let log = try await webhooks.deliveries(projectId: projectId, filter: .status(.delivered), before: nil, limit: 10).deliveries
            #expect(Set(log.compactMap(\.sequence)) == [1, 3, 5])
        }
    }
}
