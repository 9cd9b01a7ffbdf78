import Foundation
import Logging
import Persistence
import PostgresNIO
import Shared
import Testing

/// What a claim returns while a device's deliveries arrive out of order, twice, or while
/// another of the device's is in flight: the ordering promises hold, and nothing that may
/// go waits behind deliveries that may not. Against the real local Postgres, in a database
/// of these tests' own (claims are global).
@Suite(.serialized) struct DeliveryClaimTests {
    let logger = Logger.forTests("test.claims")

    static let ownDatabaseURL = Task<String, any Error> {
        var logger = Logger(label: "test.claims")
        logger.logLevel = .warning
        return try await freshDatabaseURL(logger: logger)
    }

    /// A project with one endpoint, and helpers to queue, claim and finish its deliveries.
    struct Queue: Sendable {
        let webhooks: WebhookStore
        let database: Database
        let projectId: String
        let endpointId: String

        func delivery(_ sequence: Int, device: String = "d", endpoint: String? = nil) -> NewDelivery {
            NewDelivery(
                endpointId: endpoint ?? endpointId, projectId: projectId, eventId: "\(projectId)-\(device)-\(sequence)",
                eventType: sequence % 2 == 1 ? "checkin" : "checkout", deviceId: device, eventTime: Date(),
                sequence: sequence, payload: "{}")
        }

        func claim(limit: Int = 1000, perEndpoint: Int = 1000, hold: Duration = .seconds(60), excluding: [String] = [])
            async throws -> [ClaimedDelivery]
        {
            try await webhooks.claimDue(
                limit: limit, perEndpoint: perEndpoint, owner: "a", lease: .seconds(60), gapHold: hold, excluding: excluding
            ).filter { $0.projectId == projectId }
        }

        @discardableResult
        func finish(_ attempts: [ClaimedDelivery], _ outcome: DeliveryResult.Outcome = .delivered, hold: Duration = .seconds(60))
            async throws -> [ClaimedDelivery]
        {
            try await webhooks.record(
                attempts.map {
                    DeliveryResult(
                        deliveryId: $0.id, attempt: $0.attempt, startedAt: Date(), latency: .zero,
                        statusCode: outcome == .delivered ? 204 : 500, error: nil, outcome: outcome)
                }, owner: "a", chainLease: .seconds(60), gapHold: hold)
        }

        /// The project's deliveries waiting at 'infinity' although nothing of their device is pending
        /// before them and no notifier holds them.
        func strandedHeads() async throws -> Int {
            let rows = try await database.client.query(
                """
                SELECT count(*)::int FROM deliveries d
                 WHERE d.project_id = \(projectId) AND d.status = 'pending' AND d.next_attempt_at = 'infinity'
                   AND (d.leased_until IS NULL OR d.leased_until <= now())
                   AND NOT EXISTS (SELECT 1 FROM deliveries e
                                    WHERE e.endpoint_id = d.endpoint_id AND e.device_id = d.device_id
                                      AND e.status = 'pending' AND e.sequence < d.sequence)
                """, logger: Logger(label: "test.claims"))
            var count = 0
            for try await value in rows.decode(Int.self) { count = value }
            return count
        }
    }

    func withQueue<T: Sendable>(_ body: @Sendable (Queue) async throws -> T) async throws -> T {
        let logger = logger
        return try await withMigratedDatabase(url: try await Self.ownDatabaseURL.value, logger: logger) { database in
            let projectId = "claims-" + UUID().uuidString
            try await ProjectStore(database: database, logger: logger).createProject(id: projectId, name: "Claims")
            let webhooks = WebhookStore(database: database, logger: logger, sealer: SecretSealer(key: .generate()))
            let endpoint = try await webhooks.addEndpoint(
                projectId: projectId, url: "http://127.0.0.1:9/x", secrets: [WebhookSecret.generate()])
            // Claims are global: a test's deliveries left due (those whose gap hold ends a minute
            // later, on a slow run) would fill another test's claims.
            let outcome: Result<T, any Error>
            do {
                outcome = .success(
                    try await body(Queue(webhooks: webhooks, database: database, projectId: projectId, endpointId: endpoint.id)))
            } catch {
                outcome = .failure(error)
            }
            try await database.client.perform("DELETE FROM deliveries WHERE project_id = \(projectId)", logger: logger)
            return try outcome.get()
        }
    }

    /// A claimed delivery waits out of the due order while its lease lasts, however it was
    /// claimed (by a claim, with its predecessor's result, or as it was queued). When its
    /// notifier stops renewing and the lease runs out, the lease pass makes it due for
    /// another; a lease that runs out while its notifier still renews is left to the mend pass.
    @Test func aClaimWhoseNotifierStopsGoesAgainAfterTheLeasePass() async throws {
        try await withQueue { queue in
            let webhooks = queue.webhooks
            let lease = Duration.seconds(60)
            let gone = "gone-" + UUID().uuidString
            let logger = Logger(label: "test.claims")
            func claimByAnother() async throws -> [String] {
                let claimed = try await webhooks.claimDue(
                    limit: 1000, perEndpoint: 1000, owner: "b", lease: .seconds(60), gapHold: .seconds(60))
                return claimed.filter { $0.projectId == queue.projectId }.map { "\($0.deviceId)/\($0.sequence ?? 0)" }.sorted()
            }
            func waitingFor(_ id: Int64) async throws -> DeliveryWait? {
                try await webhooks.delivery(id: id, projectId: queue.projectId)?.waitingFor
            }
            func lapse(device: String? = nil) async throws {
                try await queue.database.client.query(
                    """
                    UPDATE deliveries SET leased_until = now() - interval '1 second'
                     WHERE project_id = \(queue.projectId) AND lease_owner = \(gone)
                       AND (\(device ?? "") = '' OR device_id = \(device ?? ""))
                    """, logger: logger)
            }
            func renewalRanOut(secondsAgo seconds: Int) async throws {
                try await queue.database.client.query(
                    "UPDATE notifier_leases SET renewed_until = now() - make_interval(secs => \(seconds)) WHERE owner = \(gone)",
                    logger: logger)
            }
            func isKnown() async throws -> Bool {
                let rows = try await queue.database.client.query(
                    "SELECT count(*)::int FROM notifier_leases WHERE owner = \(gone)", logger: logger)
                var count = 0
                for try await value in rows.decode(Int.self) { count = value }
                return count > 0
            }
            try await webhooks.renewLeases(ids: [], owner: gone, lease: lease)
            #expect(try await isKnown())
            try await webhooks.enqueue([queue.delivery(1, device: "chained"), queue.delivery(2, device: "chained")])
            let first = try await webhooks.claimDue(limit: 1000, perEndpoint: 1000, owner: gone, lease: lease, gapHold: .seconds(60))
                .filter { $0.projectId == queue.projectId }
            #expect(first.map(\.sequence) == [1])
            let chained = try await webhooks.record(
                first.map {
                    DeliveryResult(
                        deliveryId: $0.id, attempt: $0.attempt, startedAt: Date(), latency: .zero, statusCode: 204, error: nil,
                        outcome: .delivered)
                }, owner: gone, chainLease: lease)
            #expect(chained.map(\.sequence) == [2])
            let queued = try await webhooks.enqueue(
                [queue.delivery(1, device: "queued")], claim: .init(owner: gone, lease: lease, limit: 10)
            ).claimed
            #expect(queued.map(\.deviceId) == ["queued"])
            #expect(try await webhooks.enqueue([queue.delivery(1, device: "alone")]) == 1)
            let alone = try await webhooks.claimDue(limit: 1000, perEndpoint: 1000, owner: gone, lease: lease, gapHold: .seconds(60))
                .filter { $0.projectId == queue.projectId }
            #expect(alone.map(\.deviceId) == ["alone"])

            // Leased: in flight, and no other notifier's claim takes them.
            #expect(try await waitingFor(chained[0].id) == .attemptInFlight)
            #expect(try await claimByAnother().isEmpty)
            // One lease runs out while its notifier renews: the lease pass leaves it, the mend pass lets it go.
            try await lapse(device: "alone")
            try await webhooks.releaseLapsedLeases(lease: lease, gapHold: .seconds(60))
            #expect(try await claimByAnother().isEmpty)
            try await webhooks.mendEveryWaitingHead(gapHold: .seconds(60))
            #expect(try await claimByAnother() == ["alone/1"])
            // The notifier stops: its renewal and its leases run out (set here rather than waited for).
            try await lapse()
            try await renewalRanOut(secondsAgo: 1)
            #expect(try await waitingFor(chained[0].id) == .nextAttempt)
            #expect(try await claimByAnother().isEmpty)
            #expect(try await webhooks.releaseLapsedLeases(lease: lease, gapHold: .seconds(60)) >= 2)
            #expect(try await claimByAnother() == ["chained/2", "queued/1"])
            #expect(try await waitingFor(chained[0].id) == .attemptInFlight)
            // A lease after its renewal ran out, every claim it made has run out: it is forgotten.
            #expect(try await isKnown())
            try await renewalRanOut(secondsAgo: 61)
            try await webhooks.releaseLapsedLeases(lease: lease, gapHold: .seconds(60))
            #expect(try await isKnown() == false)
            // A notifier that stops holding claims (a graceful shutdown) is forgotten at once.
            try await webhooks.renewLeases(ids: [], owner: gone, lease: lease)
            #expect(try await isKnown())
            try await webhooks.stopRenewing(owner: gone)
            #expect(try await isKnown() == false)
        }
    }

    /// An event queued again (a rebalance, a relay's repeat) beside its successor is no turn
    /// of the device's: the successor goes at once, not after a periodic mend.
    @Test func aRepeatedEventDoesNotHoldItsSuccessorBack() async throws {
        try await withQueue { queue in
            try await queue.webhooks.enqueue([queue.delivery(1)])
            try await queue.finish(try await queue.claim())
            // The first event again, with the next one, in one batch.
            #expect(try await queue.webhooks.enqueue([queue.delivery(1), queue.delivery(2)]) == 1)
            #expect(try await queue.claim().map(\.sequence) == [2])
        }
    }

    /// Deliveries whose predecessor has not arrived (it comes from the other event topic)
    /// wait out of the claims' way: 600 of them, more than a claim reads, and an endpoint
    /// whose deliveries the claim passes over, leave another device's delivery claimable.
    @Test func deliveriesWaitingForAGapDoNotFillTheClaim() async throws {
        try await withQueue { queue in
            let devices = (0..<600).map { "gap-\($0)" }
            // Each device's first event, and its third: the second has not been consumed yet.
            try await queue.webhooks.enqueue(devices.flatMap { [queue.delivery(1, device: $0), queue.delivery(3, device: $0)] })
            let firsts = try await queue.claim()
            #expect(firsts.count == 600)
            // Their firsts delivered: their thirds may go only once the gap hold is over.
            #expect(try await queue.finish(firsts).isEmpty)
            // A stuck endpoint with deliveries due, passed over by the claim as it would be.
            let stuck = try await queue.webhooks.addEndpoint(
                projectId: queue.projectId, url: "http://127.0.0.1:9/stuck", secrets: [WebhookSecret.generate()])
            try await queue.webhooks.enqueue((0..<300).map { queue.delivery(1, device: "stuck-\($0)", endpoint: stuck.id) })
            // Another device's event arrives: the next claim has it.
            try await queue.webhooks.enqueue([queue.delivery(1, device: "other")])
            let claimed = try await queue.claim(limit: 128, perEndpoint: 32, excluding: [stuck.id])
            #expect(claimed.map(\.deviceId) == ["other"])
        }
    }

    /// A device's event that arrives after its successor was sent past the gap hold waits
    /// until that successor's attempt is over: never two of a device in flight to one endpoint.
    /// Claims do not look for one in flight: whatever makes deliveries due meanwhile (queueing,
    /// the mend pass, the endpoint's disabling and enabling) leaves the late one waiting, and
    /// the successor's recording lets it go.
    @Test func aLateEventWaitsWhileItsSuccessorIsInFlight() async throws {
        try await withQueue { queue in
            try await queue.webhooks.enqueue([queue.delivery(1)])
            try await queue.finish(try await queue.claim())
            // 3 arrives without 2 and goes once the hold is over (zero here): it is in flight.
            try await queue.webhooks.enqueue([queue.delivery(3)], gapHold: .zero)
            let third = try await queue.claim(hold: .zero)
            #expect(third.map(\.sequence) == [3])
            // 2 arrives late: not claimed while 3 is out.
            try await queue.webhooks.enqueue([queue.delivery(2)])
            #expect(try await queue.claim().isEmpty)
            try await queue.webhooks.mendEveryWaitingHead()
            #expect(try await queue.claim().isEmpty, "claimed after the mend pass")
            _ = try await queue.webhooks.disableEndpoint(id: queue.endpointId, reason: "paused")
            _ = try await queue.webhooks.enableEndpoint(id: queue.endpointId, projectId: queue.projectId)
            #expect(try await queue.claim().isEmpty, "claimed after the endpoint's enabling")
            // 3 answered: now 2 goes.
            let next = try await queue.finish(third)
            let second = next.isEmpty ? try await queue.claim() : next
            #expect(second.map(\.sequence) == [2])
        }
    }

    /// A failed event replayed while a later one of its device is in flight waits for that one.
    @Test func aFailedEventReplayedWhileALaterOneIsInFlightWaitsForIt() async throws {
        try await withQueue { queue in
            try await queue.webhooks.enqueue([queue.delivery(1)])
            let failed = try await queue.claim()
            try await queue.finish(failed, .failed)
            try await queue.webhooks.enqueue([queue.delivery(2)])
            let out = try await queue.claim()
            #expect(out.map(\.sequence) == [2])
            let replayed = try await queue.webhooks.replay(deliveryIds: failed.map(\.id), projectId: queue.projectId)
            #expect(replayed.ids == failed.map(\.id))
            #expect(try await queue.claim().isEmpty, "the replayed first claimed while the second is out")
            let next = try await queue.finish(out)
            let first = next.isEmpty ? try await queue.claim() : next
            #expect(first.map(\.sequence) == [1])
        }
    }

    /// A device's next event queued at the very moment its previous one is recorded as
    /// delivered is let go by one of the two: none is left waiting for a mend pass.
    @Test func anEventQueuedWhileItsPredecessorIsRecordedIsNotStranded() async throws {
        try await withQueue { queue in
            for round in 0..<5 {
                let devices = (0..<200).map { "race-\(round)-\($0)" }
                try await queue.webhooks.enqueue(devices.map { queue.delivery(1, device: $0) })
                let firsts = try await queue.claim()
                #expect(firsts.count == devices.count)
                async let recorded = queue.finish(firsts)
                async let queued = queue.webhooks.enqueue(devices.map { queue.delivery(2, device: $0) })
                _ = try await (recorded, queued)
                #expect(try await queue.strandedHeads() == 0, "round \(round)")
                // Whatever was claimed or made due is finished, for the next round.
                try await queue.database.client.query(
                    "UPDATE deliveries SET status = 'delivered', lease_owner = NULL, leased_until = NULL WHERE project_id = \(queue.projectId)",
                    logger: Logger(label: "test.claims"))
            }
        }
    }

    /// A late predecessor queued at the very moment its successor (sent past the gap hold) is
    /// claimed waits for it: never two of a device's deliveries in flight at once.
    @Test func aLatePredecessorQueuedWhileItsSuccessorIsClaimedWaits() async throws {
        try await withQueue { queue in
            for round in 0..<5 {
                let devices = (0..<200).map { "late-\(round)-\($0)" }
                // The second events, their first ones not queued: due at once with no gap hold.
                try await queue.webhooks.enqueue(devices.map { queue.delivery(2, device: $0) }, gapHold: .zero)
                async let claimed = queue.claim(hold: .zero)
                async let queued = queue.webhooks.enqueue(
                    devices.map { queue.delivery(1, device: $0) }, gapHold: .zero,
                    claim: WebhookStore.QueueClaim(owner: "a", lease: .seconds(60), limit: 1000))
                let (seconds, firsts) = try await (claimed, queued.claimed)
                let inFlight = Dictionary(grouping: seconds + firsts, by: \.deviceId).filter { $0.value.count > 1 }
                #expect(inFlight.isEmpty, "round \(round): \(inFlight.count) devices with two in flight")
                try await queue.database.client.query(
                    "UPDATE deliveries SET status = 'delivered', lease_owner = NULL, leased_until = NULL WHERE project_id = \(queue.projectId)",
                    logger: Logger(label: "test.claims"))
            }
        }
    }

    /// Queuing first locks the device's pending deliveries. When that lock meets a deadlock
    /// (another transaction holds the device's second pending delivery and then wants the
    /// first), Postgres aborts the queuing statement: the queuing is tried again and queues its
    /// delivery. It does not fail later with "current transaction is aborted" (25P02), which
    /// names no cause and would set a good event aside as a record at fault.
    @Test func aDeadlockMetWhileQueuingIsRetried() async throws {
        try await withQueue { queue in
            let logger = Logger(label: "test.claims")
            let client = queue.database.client
            try await queue.webhooks.enqueue([queue.delivery(1), queue.delivery(2)])
            var ids: [Int64] = []
            for try await id in try await client.query(
                "SELECT id FROM deliveries WHERE project_id = \(queue.projectId) ORDER BY id", logger: logger
            ).decode(Int64.self) { ids.append(id) }
            try #require(ids.count == 2)
            let (first, second) = (ids[0], ids[1])

            // Postgres aborts whichever of the two runs its deadlock check first. The case meant
            // is the queuing's abort; when the box schedules the holder's check first instead, the
            // queuing simply goes on, and the case is set up again with the device's next event.
            var sequence = 3
            var queuingWasAborted = false
            while !queuingWasAborted, sequence < 3 + 5 {
                let secondLocked = AsyncStream.makeStream(of: Void.self)
                let queuingWaits = AsyncStream.makeStream(of: Void.self)
                async let holder: Void = client.withTransaction(logger: logger) { connection in
                    try await connection.perform("SELECT id FROM deliveries WHERE id = \(second) FOR UPDATE", logger: logger)
                    secondLocked.continuation.yield()
                    for await _ in queuingWaits.stream { break }
                    // Waits for the queuing, which waits for this: a deadlock.
                    try await connection.perform("SELECT id FROM deliveries WHERE id = \(first) FOR UPDATE", logger: logger)
                }
                for await _ in secondLocked.stream { break }
                let next = queue.delivery(sequence)
                async let queued = queue.webhooks.enqueue([next])
                let deadline = ContinuousClock.now + .seconds(30)
                while true {
                    var waiting = 0
                    for try await count in try await client.query(
                        """
                        SELECT count(*)::int FROM pg_stat_activity
                         WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%FOR SHARE OF d%'
                        """, logger: logger
                    ).decode(Int.self) { waiting = count }
                    if waiting > 0 { break }
                    guard ContinuousClock.now < deadline else { throw TestFailure("the queuing never waited for the lock") }
                    try await Task.sleep(for: .milliseconds(10))
                }
                // The holder asks for its second lock half a second after the queuing began to
                // wait, so that the queuing's check (a deadlock_timeout, 1 s, after it began to
                // wait) usually comes first.
                try await Task.sleep(for: .milliseconds(500))
                queuingWaits.continuation.yield()
                do {
                    try await holder
                    // The holder went on: the deadlock was broken by aborting the queuing.
                    queuingWasAborted = true
                } catch let error as PostgresTransactionError {
                    let state = (error.closureError as? PSQLError)?.serverInfo?[.sqlState]
                    guard state == "40P01" else { throw error }
                }
                // Either way the queuing queued its delivery, once.
                #expect(try await queued == 1)
                sequence += 1
            }
            #expect(queuingWasAborted, "the holder was the one aborted in every attempt")
            var sequences: [Int] = []
            for try await value in try await client.query(
                "SELECT sequence::int FROM deliveries WHERE project_id = \(queue.projectId) ORDER BY sequence", logger: logger
            ).decode(Int.self) { sequences.append(value) }
            #expect(sequences == Array(1..<sequence))
        }
    }

    /// Deliveries that may go at once are claimed by the transaction that queues them (up to
    /// the taker's room, none of an endpoint it holds enough of); those that must wait are not.
    @Test func deliveriesThatMayGoAtOnceAreClaimedAsTheyAreQueued() async throws {
        try await withQueue { queue in
            let crowded = try await queue.webhooks.addEndpoint(
                projectId: queue.projectId, url: "http://127.0.0.1:9/crowded", secrets: [WebhookSecret.generate()])
            let (queued, claimed, dueUnclaimed) = try await queue.webhooks.enqueue(
                [
                    queue.delivery(1, device: "a"), queue.delivery(2, device: "a"), queue.delivery(1, device: "b"),
                    queue.delivery(1, device: "c"), queue.delivery(3, device: "gap"), queue.delivery(1, device: "x", endpoint: crowded.id),
                ],
                gapHold: .seconds(60),
                claim: WebhookStore.QueueClaim(owner: "a", lease: .seconds(60), limit: 2, excluding: [crowded.id]))
            #expect(queued == 6)
            // c's first may go but was not taken (no room): a claim is to look for it. The crowded
            // endpoint's x waits until the taker holds fewer of that endpoint's, which it sees itself.
            #expect(dueUnclaimed == 1)
            // a's first and b's first (the limit is two, in queue order); a's second waits behind
            // its first, the gap's for its predecessor, the crowded endpoint's for a claim.
            #expect(claimed.map { "\($0.deviceId)/\($0.sequence ?? 0)" } == ["a/1", "b/1"])
            #expect(claimed.allSatisfy { $0.attempt == 1 && $0.queuedAt != nil })
            // Claimed for "a": no one else's claim sees them; the rest that may go, does.
            let others = try await queue.webhooks.claimDue(
                limit: 100, perEndpoint: 100, owner: "b", lease: .seconds(60), gapHold: .seconds(60)
            ).filter { $0.projectId == queue.projectId }
            #expect(Set(others.map { "\($0.deviceId)/\($0.sequence ?? 0)" }) == ["c/1", "x/1"])
        }
    }
}
