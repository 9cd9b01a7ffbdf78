import ArgumentParser
import CommandSupport
import Foundation
import Hummingbird
import Logging
import Notifier
import Persistence
import ServiceLifecycle
import Shared
import Synchronization

/// The notifier's dispatcher alone, against partners in this process: deliveries per
/// second to one endpoint that answers 200 at once, and a healthy endpoint's latency
/// alone and beside an endpoint that never answers. Deliveries are queued straight into
/// Postgres (CHECKIN_DATABASE_URL), as the intake queues them.
struct NotifierBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "notifier",
        abstract: "Measure the webhook dispatcher.",
        discussion: "Its throughput, and a healthy endpoint's latency alone and beside an endpoint that times out.")

    @Option(parsing: .unconditional, help: "Deliveries in the throughput run.") var deliveries = 20_000
    @Option(parsing: .unconditional, help: "Distinct devices (a device's deliveries go one after another).") var devices = 2_000
    @Option(parsing: .unconditional, help: "Attempts in flight (CHECKIN_WEBHOOK_CONCURRENCY).") var concurrency = 64
    @Option(parsing: .unconditional, help: "Attempts in flight per endpoint (CHECKIN_WEBHOOK_ENDPOINT_CONCURRENCY).")
    var endpointConcurrency = 64
    @Option(parsing: .unconditional, help: "Deliveries per second to the healthy endpoint in the latency runs.") var rate = 200
    @Option(parsing: .unconditional, help: "Seconds each latency run lasts.") var seconds = 15
    @Option(parsing: .unconditional, help: "Request timeout in the latency runs, what the stuck endpoint costs per attempt.")
    var timeout = 5
    @Option(parsing: .unconditional, help: "Deliveries queued for the endpoint that never answers.") var stuckQueued = 2_000
    @Option(help: "Host name of the endpoint that never answers (the partners listen on 127.0.0.1).") var stuckHost = "127.0.0.1"
    @Flag(
        inversion: .prefixedNo,
        help: "Claim a device's next delivery with its predecessor's result (the default), or release it for a later claim.")
    var claimSuccessors = true

    func validate() throws {
        guard deliveries >= 1, devices >= 1 else {
            throw CommandFailure("--deliveries and --devices must be at least 1", helpOf: Self.self)
        }
        // The ranges the notifier's settings take (CHECKIN_WEBHOOK_CONCURRENCY, CHECKIN_WEBHOOK_ENDPOINT_CONCURRENCY).
        guard (1...4096).contains(concurrency) else {
            throw CommandFailure("--concurrency must be from 1 to 4096", helpOf: Self.self)
        }
        guard (1...1024).contains(endpointConcurrency) else {
            throw CommandFailure("--endpoint-concurrency must be from 1 to 1024", helpOf: Self.self)
        }
        guard rate >= 1, seconds >= 1, timeout >= 1 else {
            throw CommandFailure("--rate, --seconds and --timeout must be at least 1", helpOf: Self.self)
        }
        guard stuckQueued >= 0 else { throw CommandFailure("--stuck-queued must be 0 or more", helpOf: Self.self) }
    }

    func run() async throws {
        var logger = Logger(label: "checkin.bench")
        // The stuck endpoint's time-outs are the point of the latency run, not news.
        logger.logLevel = .error
        let settings = try ProcessSettings()
        let database = Database(configuration: settings.database, logger: logger)
        let partner = BenchPartner(stuckFor: .seconds(timeout * 2))
        let port = AsyncStream.makeStream(of: Int.self)
        let app = partner.application { port.continuation.yield($0) }
        try await runServices([database, app], logger: logger) {
            try await database.waitUntilReachable(timeout: .seconds(8))
            try await Migrator(database: database, logger: logger).migrate()
            var ports = port.stream.makeAsyncIterator()
            guard let partnerPort = await ports.next() else { throw CommandFailure("the partner did not start") }
            let run = String(UUID().uuidString.prefix(8)).lowercased()
            // The bench's endpoints live only for the run: a key of its own seals their secrets.
            let webhooks = WebhookStore(
                database: database, logger: logger, sealer: SecretSealer(key: SecretEncryptionKey.generate()))
            let projects = ProjectStore(database: database, logger: logger)
            for project in ["fast", "steady", "steady2", "stuck"] {
                try await projects.createProject(id: "bench-\(run)-\(project)", name: "Benchmark \(project)")
            }
            let secret = WebhookSecret.generate()
            func endpoint(_ project: String, path: String, host: String = "127.0.0.1") async throws -> WebhookEndpoint {
                try await webhooks.addEndpoint(
                    projectId: "bench-\(run)-\(project)", url: "http://\(host):\(partnerPort)" + path, secrets: [secret])
            }

            // Throughput: everything queued up front, then one dispatcher empties the queue.
            let fast = try await endpoint("fast", path: "/ok")
            let perDevice = max(1, deliveries / devices)
            var queued = 0
            while queued < deliveries {
                let chunk = (queued..<min(queued + 5_000, deliveries)).map { index in
                    delivery(to: fast, device: index % devices, sequence: index / devices + 1, sentAt: Date())
                }
                try await webhooks.enqueue(chunk)
                queued += chunk.count
            }
            // Statistics and visibility as autovacuum would leave them, so that plans do not change mid-run.
            try await database.client.perform("VACUUM ANALYZE deliveries", logger: logger)
            let throughputConfiguration = NotifierConfiguration(
                concurrency: concurrency, endpointConcurrency: endpointConcurrency, pollInterval: .milliseconds(100),
                claimsSuccessorsWithResults: claimSuccessors)
            let started = ContinuousClock.now
            try await withDispatcher(throughputConfiguration, webhooks: webhooks, logger: logger) { _ in
                while partner.count(path: "/ok") < deliveries { try await Task.sleep(for: .milliseconds(20)) }
            }
            let elapsed = (ContinuousClock.now - started).seconds
            print(
                String(
                    format: "throughput: %d deliveries (%d devices x %d in sequence) to one endpoint in %.2f s = %.0f deliveries/s",
                    deliveries, devices, perDevice, elapsed, Double(deliveries) / elapsed))

            // Latency of a steady stream to a healthy endpoint, alone and beside one that never answers.
            let latencyConfiguration = NotifierConfiguration(
                concurrency: concurrency, endpointConcurrency: min(16, endpointConcurrency), requestTimeout: .seconds(timeout),
                pollInterval: .milliseconds(100), claimsSuccessorsWithResults: claimSuccessors)
            try await database.client.perform("VACUUM ANALYZE deliveries", logger: logger)
            let alone = try await steadyStream(
                to: try await endpoint("steady", path: "/steady"), path: "/steady", partner: partner,
                configuration: latencyConfiguration, webhooks: webhooks, logger: logger)
            let stuck = try await endpoint("stuck", path: "/stuck", host: stuckHost)
            try await webhooks.enqueue((0..<stuckQueued).map { delivery(to: stuck, device: $0, sequence: 1, sentAt: Date()) })
            try await database.client.perform("VACUUM ANALYZE deliveries", logger: logger)
            let beside = try await steadyStream(
                to: try await endpoint("steady2", path: "/steady2"), path: "/steady2", partner: partner,
                configuration: latencyConfiguration, webhooks: webhooks, logger: logger)
            print(
                String(
                    format:
                        "latency of a healthy endpoint at %d deliveries/s for %d s: alone p50 %.1f ms, p99 %.1f ms; beside an endpoint that never answers (%d s timeout, %d queued): p50 %.1f ms, p99 %.1f ms (%.2fx)",
                    rate, seconds, alone.p50, alone.p99, timeout, stuckQueued, beside.p50, beside.p99, beside.p99 / alone.p99))
            print("stuck endpoint: \(partner.count(path: "/stuck")) attempts started meanwhile")
            // The run's endpoints go with their deliveries, so that the next run's claims see none of them.
            for endpoint in [fast, stuck] { try await webhooks.removeEndpoint(id: endpoint.id, projectId: endpoint.projectId) }
            for project in ["steady", "steady2"] {
                for endpoint in try await webhooks.endpoints(projectId: "bench-\(run)-\(project)") {
                    try await webhooks.removeEndpoint(id: endpoint.id, projectId: endpoint.projectId)
                }
            }
        }
    }

    /// Queues `rate` deliveries a second for `seconds`, as the intake would, and returns the
    /// p50 and p99 of queue-to-partner latency in milliseconds.
    func steadyStream(
        to endpoint: WebhookEndpoint, path: String, partner: BenchPartner, configuration: NotifierConfiguration,
        webhooks: WebhookStore, logger: Logger
    ) async throws -> (p50: Double, p99: Double) {
        let total = rate * seconds
        try await withDispatcher(configuration, webhooks: webhooks, logger: logger) { dispatcher in
            let tick = Duration.milliseconds(50)
            let perTick = max(1, rate / 20)
            var sent = 0
            var next = ContinuousClock.now
            while sent < total {
                let batch = (sent..<min(sent + perTick, total)).map {
                    delivery(to: endpoint, device: $0 % 500, sequence: $0 / 500 + 1, sentAt: Date())
                }
                try await webhooks.enqueue(batch)
                dispatcher.wake()
                sent += batch.count
                next += tick
                try await Task.sleep(until: next, clock: .continuous)
            }
            let deadline = ContinuousClock.now + .seconds(120)
            while partner.count(path: path) < total, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
        }
        let latencies = partner.latencies(path: path).sorted()
        guard !latencies.isEmpty else { throw CommandFailure("nothing reached \(path)") }
        func percentile(_ p: Double) -> Double { latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))] * 1000 }
        return (percentile(0.5), percentile(0.99))
    }

    /// A delivery whose event id carries when it was queued, for the partner to measure by.
    func delivery(to endpoint: WebhookEndpoint, device: Int, sequence: Int, sentAt: Date) -> NewDelivery {
        let eventId = "bench-\(Int64(sentAt.timeIntervalSince1970 * 1_000_000))-\(device)-\(sequence)"
        let event = CheckEvent(
            eventId: eventId, type: sequence % 2 == 1 ? .checkin : .checkout, projectId: endpoint.projectId,
            deviceId: "device-\(device)", checkInId: eventId,
            zone: ZoneSummary(id: "zone-1", name: "Coffee kiosk", description: "Benchmark zone", customData: ["storeId": "042"]),
            fence: FenceSummary(
                id: "fence-1", name: "Kiosk", description: "", geometry: .point(Position(lon: 144.9631, lat: -37.8136)), radius: 50),
            location: EventLocation(timestamp: sentAt, lat: -37.8136, lon: 144.9631, accuracy: 8), willCheckOut: true,
            mode: .normal, sequence: sequence)
        let body = WebhookPayload.body(type: event.type, timestamp: sentAt, event: (try? event.wireJSON()) ?? [])
        return NewDelivery(
            endpointId: endpoint.id, projectId: endpoint.projectId, eventId: eventId, eventType: event.type.rawValue,
            deviceId: event.deviceId, eventTime: sentAt, sequence: sequence, payload: String(decoding: body, as: UTF8.self))
    }

    func withDispatcher(
        _ configuration: NotifierConfiguration, webhooks: WebhookStore, logger: Logger,
        _ body: (WebhookDispatcher) async throws -> Void
    ) async throws {
        let dispatcher = WebhookDispatcher(
            configuration: configuration, webhooks: webhooks,
            webhookClient: try GuardedWebhookClient(policy: .local, maximumIdlePerHost: configuration.idleConnectionsPerHost),
            logger: logger)
        try await runServices([dispatcher], logger: logger) { try await body(dispatcher) }
    }

    /// Runs services for the length of `body`, then stops them gracefully.
    func runServices(_ services: [any Service], logger: Logger, _ body: () async throws -> Void) async throws {
        let group = ServiceGroup(
            configuration: .init(services: services.map { .init(service: $0) }, gracefulShutdownSignals: [], logger: logger))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            do {
                try await body()
            } catch {
                await group.triggerGracefulShutdown()
                throw error
            }
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
    }
}

/// The partners of the benchmark: `/stuck` never answers in time; every other path
/// answers 200 at once and notes how long each delivery took from being queued.
final class BenchPartner: Sendable {
    private let state = Mutex<[String: [Double]]>([:])
    /// Longer than the notifier's request timeout: every attempt at `/stuck` times out.
    let stuckFor: Duration

    init(stuckFor: Duration) {
        self.stuckFor = stuckFor
    }

    func count(path: String) -> Int { state.withLock { $0[path]?.count ?? 0 } }
    func latencies(path: String) -> [Double] { state.withLock { $0[path] ?? [] } }

    func application(onRunning: @escaping @Sendable (Int) async -> Void) -> some ApplicationProtocol {
        let router = Router()
        router.post("/:path") { request, context -> Response in
            let path = "/" + (context.parameters.get("path") ?? "")
            if path == "/stuck" {
                self.note(path: path, latency: 0)
                try? await Task.sleep(for: self.stuckFor)
                return Response(status: .ok)
            }
            _ = try await request.body.collect(upTo: 1 << 20)
            let id = request.headers[.init("webhook-id")!] ?? ""
            let micros = id.split(separator: "-").dropFirst().first.flatMap { Double($0) } ?? 0
            self.note(path: path, latency: Date().timeIntervalSince1970 - micros / 1_000_000)
            return Response(status: .ok)
        }
        var logger = Logger(label: "checkin.bench.partner")
        logger.logLevel = .warning
        return Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { await onRunning($0.localAddress?.port ?? 0) }, logger: logger)
    }

    private func note(path: String, latency: Double) {
        state.withLock { $0[path, default: []].append(latency) }
    }
}
