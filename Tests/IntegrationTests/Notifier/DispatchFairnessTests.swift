import Foundation
import Hummingbird
import KafkaTesting
import Logging
import Notifier
import Persistence
import PostgresNIO
import ServiceLifecycle
import Shared
import Testing

/// No endpoint can delay another: a partner that never answers takes its own share of
/// the notifier and no more.
@Suite(.serialized) struct DispatchFairnessTests {
    let logger = Logger.forTests("test.dispatch")

    /// Eight slots, two per endpoint, a 20 s timeout and a minute before any retry: what the
    /// tests of two partners run with.
    static let twoSlotsPerEndpoint = NotifierConfiguration(
        concurrency: 8, endpointConcurrency: 2, requestTimeout: .seconds(20), initialRetryDelay: .seconds(60),
        pollInterval: .milliseconds(100))

    /// The slow partner's attempts take the whole timeout, the yardstick of the healthy one's
    /// deliveries: a minute, which a loaded machine does not reach while the healthy partner's
    /// forty go two at a time (with 20 s, a run beside the whole suite once took longer).
    @Test func anEndpointThatTimesOutDoesNotDelayAnother() async throws {
        let logger = logger
        var configuration = Self.twoSlotsPerEndpoint
        configuration.requestTimeout = .seconds(60)
        let (database, webhooks, dispatcher) = try await Self.dispatcherOnFreshDatabase(configuration, logger: logger)
        let slow = ReceivedWebhooks()
        let healthy = ReceivedWebhooks()
        try await Self.withTwoPartners(
            database: database, webhooks: webhooks, logger: logger, first: slow, second: healthy,
            firstResponds: { _, _ in
                try? await Task.sleep(for: .seconds(90))
                return nil
            }
        ) { slowEndpoint, healthyEndpoint in
            // The slow partner's deliveries are queued first, more than the notifier's slots.
            try await webhooks.enqueue(try Self.deliveries(count: 100, to: slowEndpoint))
            try await webhooks.enqueue(try Self.deliveries(count: 40, to: healthyEndpoint))

            try await withServicesRunning([dispatcher]) {
                try await healthy.wait(timeout: .seconds(60)) { $0.count >= 40 }
                // Every healthy delivery arrived before any attempt at the slow partner ended (each
                // takes the 60 s timeout): none of them waited for the slow partner.
                // (In the attempt log, or on the delivery's row for the attempt that finished it.)
                let slowAttemptsEnded = try await database.client.query(
                    """
                    SELECT (SELECT count(*) FROM delivery_attempts a JOIN deliveries d ON d.id = a.delivery_id
                             WHERE d.endpoint_id = \(slowEndpoint.id))
                         + (SELECT count(*) FROM deliveries d
                             WHERE d.endpoint_id = \(slowEndpoint.id) AND d.finishing_attempt_started_at IS NOT NULL)
                    """, logger: logger
                ).decode(Int.self).reduce(0, +)
                #expect(slowAttemptsEnded == 0)
                // And the slow partner held no more than its share of the slots.
                #expect(await slow.requests.count <= configuration.endpointConcurrency)
            }
        }
    }

    /// A partner that answers fast may hold more of the notifier than its slots' share; once it
    /// stops answering, it gives back what it holds beyond that, and nothing is lost.
    @Test func anEndpointThatStopsAnsweringGivesBackWhatItTookWhileFast() async throws {
        let logger = logger
        let configuration = Self.twoSlotsPerEndpoint
        let share = 2 * configuration.endpointConcurrency
        let answeredBeforeStopping = 200
        let (database, webhooks, dispatcher) = try await Self.dispatcherOnFreshDatabase(configuration, logger: logger)
        let partner = ReceivedWebhooks()
        let other = ReceivedWebhooks()
        try await Self.withTwoPartners(
            database: database, webhooks: webhooks, logger: logger, first: partner, second: other,
            firstResponds: { _, _ in
                if await partner.requests.count > answeredBeforeStopping { try? await Task.sleep(for: .seconds(30)) }
                return nil
            }
        ) { partnerEndpoint, otherEndpoint in
            try await webhooks.enqueue(try Self.deliveries(count: 400, to: partnerEndpoint))
            let leased = { @Sendable () async throws -> Int in
                try await database.client.query(
                    """
                    SELECT count(*) FROM deliveries
                     WHERE endpoint_id = \(partnerEndpoint.id) AND status = 'pending' AND lease_owner IS NOT NULL
                    """, logger: logger
                ).decode(Int.self).reduce(0, +)
            }

            try await withServicesRunning([dispatcher]) {
                try await partner.wait(timeout: .seconds(60)) { $0.count >= answeredBeforeStopping }
                // While it answered fast it held at least twice its share (a claim takes at most
                // its share of one endpoint): read as soon as the claims after its last fast answer
                // landed, before its silence of a second or two makes the dispatcher give some back.
                var heldWhenItStopped = try await leased()
                let settled = ContinuousClock.now + .seconds(1)
                while heldWhenItStopped < 2 * share && ContinuousClock.now < settled {
                    try await Task.sleep(for: .milliseconds(50))
                    heldWhenItStopped = try await leased()
                }
                #expect(heldWhenItStopped >= 2 * share, "held \(heldWhenItStopped)")
                // Silent for a second or two: it keeps its share (its attempts in flight and one
                // slot's worth queued) and gives back the rest.
                var held = heldWhenItStopped
                let deadline = ContinuousClock.now + .seconds(10)
                while held > share && ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(200))
                    held = try await leased()
                }
                #expect(held <= share, "still held \(held) of \(heldWhenItStopped)")
                // Another partner's deliveries go meanwhile.
                try await webhooks.enqueue(try Self.deliveries(count: 20, to: otherEndpoint))
                try await other.wait(timeout: .seconds(10)) { $0.count >= 20 }
                // Nothing given back is lost: all the silent partner's undelivered deliveries wait, pending.
                let pending = try await database.client.query(
                    "SELECT count(*) FROM deliveries WHERE endpoint_id = \(partnerEndpoint.id) AND status = 'pending'",
                    logger: logger
                ).decode(Int.self).reduce(0, +)
                #expect(pending == 400 - answeredBeforeStopping)
            }
        }
    }

    /// Sent deliveries keep their leases until their results are written. When writing falls
    /// behind, the notifier stops claiming instead of sending the whole queue: otherwise the
    /// leases it renews grow with every claim, and so does the renewal that holds up the writing.
    @Test func claimsWaitWhileResultsCannotBeWritten() async throws {
        let logger = logger
        let configuration = {
            var configuration = NotifierConfiguration(concurrency: 8, endpointConcurrency: 8, pollInterval: .milliseconds(100))
            configuration.resultBatch = 50
            return configuration
        }()
        let (database, webhooks, dispatcher) = try await Self.dispatcherOnFreshDatabase(configuration, logger: logger)
        let secret = WebhookSecret.generate()
        let received = ReceivedWebhooks()
        let ports = AsyncStream.makeStream(of: Int.self)
        // Each webhook's first attempt is answered 503, to be retried at once: its result goes to
        // the attempt log (an attempt that finishes a delivery is written on the delivery's row).
        let receiver = WebhookReceiver.application(
            secret: try WebhookSecret(secret), received: received,
            respond: { _, arrival in arrival == 1 ? Response(status: .serviceUnavailable, headers: [.retryAfter: "0"]) : nil }
        ) {
            ports.continuation.yield($0)
        }
        try await withServicesRunning([database, receiver]) {
            var port = 0
            for await running in ports.stream {
                port = running
                break
            }
            try await Migrator(database: database, logger: logger).migrate()
            try await ProjectStore(database: database, logger: logger).createProject(id: "backlog", name: "Backlog")
            let endpoint = try await webhooks.addEndpoint(
                projectId: "backlog", url: "http://127.0.0.1:\(port)/hooks", secrets: [secret])
            let queued = 600
            try await webhooks.enqueue(try Self.deliveries(count: queued, to: endpoint))

            try await withServicesRunning([dispatcher]) {
                // Results cannot be written while this transaction holds the attempt log.
                try await database.client.withConnection { blocker in
                    try await blocker.query("BEGIN", logger: logger)
                    try await blocker.query("LOCK TABLE delivery_attempts IN SHARE MODE", logger: logger)
                    let deadline = ContinuousClock.now + .seconds(30)
                    while await received.requests.count < configuration.resultBatch, ContinuousClock.now < deadline {
                        try await Task.sleep(for: .milliseconds(100))
                    }
                    var sent = await received.requests.count
                    #expect(sent >= configuration.resultBatch, "sent \(sent)")
                    while true {
                        try await Task.sleep(for: .seconds(1))
                        let now = await received.requests.count
                        if now == sent { break }
                        sent = now
                    }
                    // A batch waiting, what the loop held (its hold) and one claim more.
                    let capacity = WebhookDispatcher.capacity(configuration)
                    #expect(sent <= configuration.resultBatch + capacity + capacity, "sent \(sent) of \(queued)")
                    try await blocker.query("COMMIT", logger: logger)
                }
                try await received.wait(timeout: .seconds(60)) { $0.count >= queued }
                // And every result is written once the attempt log is free again.
                var delivered = 0
                let deadline = ContinuousClock.now + .seconds(30)
                while delivered < queued && ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(100))
                    delivered = try await database.client.query(
                        "SELECT count(*) FROM deliveries WHERE status = 'delivered'", logger: logger
                    ).decode(Int.self).reduce(0, +)
                }
                #expect(delivered == queued)
                #expect(await received.payloads.count == queued)
            }
        }
    }

    /// Two partners, each the endpoint of a project of its own on `database`: the first answers
    /// as `firstResponds` says, the second at once. Runs `body` with their endpoints, the first's first.
    static func withTwoPartners(
        database: Database, webhooks: WebhookStore, logger: Logger, first: ReceivedWebhooks, second: ReceivedWebhooks,
        firstResponds: @escaping WebhookReceiver.Responder,
        _ body: (WebhookEndpoint, WebhookEndpoint) async throws -> Void
    ) async throws {
        let secret = WebhookSecret.generate()
        let ports = AsyncStream.makeStream(of: (String, Int).self)
        let firstReceiver = WebhookReceiver.application(
            secret: try WebhookSecret(secret), received: first, respond: firstResponds,
            onRunning: { ports.continuation.yield(("first", $0)) })
        let secondReceiver = WebhookReceiver.application(secret: try WebhookSecret(secret), received: second) {
            ports.continuation.yield(("second", $0))
        }
        try await withServicesRunning([database, firstReceiver, secondReceiver]) {
            var known: [String: Int] = [:]
            for await (name, port) in ports.stream {
                known[name] = port
                if known.count == 2 { break }
            }
            try await Migrator(database: database, logger: logger).migrate()
            let projects = ProjectStore(database: database, logger: logger)
            var endpoints: [WebhookEndpoint] = []
            for name in ["first", "second"] {
                try await projects.createProject(id: name, name: "The \(name) partner")
                endpoints.append(
                    try await webhooks.addEndpoint(
                        projectId: name, url: "http://127.0.0.1:\(known[name]!)/hooks", secrets: [secret]))
            }
            try await body(endpoints[0], endpoints[1])
        }
    }

    /// A database of the test's own and a dispatcher over it (the notifier without its consumer).
    static func dispatcherOnFreshDatabase(_ configuration: NotifierConfiguration, logger: Logger) async throws
        -> (Database, WebhookStore, WebhookDispatcher)
    {
        let url = try await freshDatabaseURL(logger: logger)
        let database = Database(configuration: try DatabaseConfiguration(url: url), logger: logger)
        let webhooks = WebhookStore(database: database, logger: logger, sealer: PipelineHarness().sealer)
        let dispatcher = WebhookDispatcher(
            configuration: configuration, webhooks: webhooks, webhookClient: try GuardedWebhookClient(policy: .local),
            logger: logger)
        return (database, webhooks, dispatcher)
    }

    /// Events of distinct devices (so that no ordering holds them back), as the intake queues them.
    static func deliveries(count: Int, to endpoint: WebhookEndpoint) throws -> [NewDelivery] {
        try (0..<count).map { index in
            let event = CheckEvent(
                eventId: "\(endpoint.id)-\(index)", type: .checkin, projectId: endpoint.projectId, deviceId: "device-\(index)",
                checkInId: "\(endpoint.id)-\(index)", zone: ZoneSummary(id: "z", name: "Z", description: "", customData: [:]),
                location: EventLocation(timestamp: Date(), lat: 0, lon: 0), willCheckOut: false, mode: .normal, sequence: 1)
            let body = WebhookPayload.body(type: .checkin, timestamp: Date(), event: try WireJSON.encoder().encode(event))
            return NewDelivery(
                endpointId: endpoint.id, projectId: endpoint.projectId, eventId: event.eventId, eventType: "checkin",
                deviceId: event.deviceId, eventTime: Date(), sequence: 1, payload: String(decoding: body, as: UTF8.self))
        }
    }
}
