import ArgumentParser
import AsyncHTTPClient
import CommandSupport
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Persistence
import ServiceLifecycle
import ServiceSupport
import Shared

struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Watch a device trip become webhooks, locally.",
        discussion: """
            Starts ingest, evaluator and notifier in this process, creates a demo project with a zone carrying \
            custom data, registers a local partner endpoint that verifies every signature, sends a short trip \
            through POST /v1/fixes, and prints the webhooks as the partner receives them. Keeps running until \
            Ctrl-C, or exits after the trip with --once.
            """)

    @Flag(help: "Exit after the trip's check-in and check-out webhooks arrived.") var once = false
    @Option(parsing: .unconditional, help: "Seconds to wait for the webhooks before giving up (1 to 3600).") var timeout: Int = 120

    func validate() throws {
        guard (1...3600).contains(timeout) else { throw CommandFailure("--timeout must be from 1 to 3600 seconds", helpOf: Self.self) }
    }

    func run() async throws {
        var environment = EnvironmentReader()
        if environment.optionalString("CHECKIN_LOG_LEVEL") == nil { environment.values["CHECKIN_LOG_LEVEL"] = "warning" }
        try LoggingSetup.bootstrap(environment: environment)
        MetricsBootstrap.prometheus()
        let logger = Logger(label: "checkin.demo")
        let settings = try ProcessSettings(environment: environment, localBroker: true, localDevelopment: true)
        let pipeline = Pipeline(settings: settings, stages: .all, logger: logger)
        try await pipeline.httpAddress().ensureFree()
        print("• preparing Postgres and the broker (migrations, topics)…")
        let sealer = try await settings.prepare(logger: logger)
        try await DemoScript.refuseAProjectNotItsOwn(settings: settings, logger: logger)

        let secret = WebhookSecret.generate()
        let received = AsyncStream.makeStream(of: WebhookPayload.self)
        let ports = AsyncStream.makeStream(of: (String, Int).self)
        let receiver = PartnerReceiver(secret: try WebhookSecret(secret), received: received.continuation)
        var services = try pipeline.services(sealer: sealer, onIngestRunning: { port in ports.continuation.yield(("ingest", port)) })
        services.append(receiver.application(logger: logger) { port in ports.continuation.yield(("partner", port)) })
        let group = ServiceGroup(
            configuration: .init(
                services: services.map { .init(service: $0) }, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))

        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            tasks.addTask {
                var known: [String: Int] = [:]
                for await (name, port) in ports.stream {
                    known[name] = port
                    if known.count == 2 { break }
                }
                guard let ingestPort = known["ingest"], let partnerPort = known["partner"] else { return }
                let deviceId = try await DemoScript(settings: settings, sealer: sealer, logger: logger).run(
                    ingestPort: ingestPort, partnerURL: "http://127.0.0.1:\(partnerPort)/webhooks", secret: secret)
                try await waitForTrip(deviceId: deviceId, webhooks: received.stream)
                if once {
                    await group.triggerGracefulShutdown()
                } else {
                    print("\n• the pipeline keeps running: POST fixes to http://127.0.0.1:\(ingestPort)/v1/fixes; Ctrl-C stops it.")
                    for await payload in received.stream { PartnerReceiver.show(payload) }
                }
            }
            try await tasks.next()
            try await tasks.next()
        }
    }

    func waitForTrip(deviceId: String, webhooks: AsyncStream<WebhookPayload>) async throws {
        let limit = timeout
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask {
                var seen: Set<EventType> = []
                for await payload in webhooks where payload.data.deviceId == deviceId {
                    PartnerReceiver.show(payload)
                    seen.insert(payload.data.type)
                    if seen.count == 2 { return }
                }
            }
            tasks.addTask {
                try await Task.sleep(for: .seconds(limit))
                throw CommandFailure("no check-in and check-out webhooks within \(limit) s: see the logs above (CHECKIN_LOG_LEVEL=info)")
            }
            try await tasks.next()
            tasks.cancelAll()
        }
        print("\n✓ the trip's check-in and check-out reached the partner, signatures verified.")
    }
}

/// A partner's webhook endpoint, as a partner would write it: verify, then use.
struct PartnerReceiver: Sendable {
    let secret: WebhookSecret
    let received: AsyncStream<WebhookPayload>.Continuation

    func application(logger: Logger, onRunning: @escaping @Sendable (Int) async -> Void) -> some ApplicationProtocol {
        let router = Router()
        router.post("/webhooks") { request, _ -> Response in
            let body = try await request.body.collect(upTo: 1 << 20)
            let bytes = Array(buffer: body)
            do {
                try WebhookSignature.verify(
                    id: request.headers[HTTPField.Name(WebhookSignature.idHeader)!],
                    timestamp: request.headers[HTTPField.Name(WebhookSignature.timestampHeader)!],
                    signatureHeader: request.headers[HTTPField.Name(WebhookSignature.signatureHeader)!], body: bytes,
                    secret: secret)
            } catch {
                print("✗ partner rejected a webhook: \(error)")
                return Response(status: .unauthorized)
            }
            let payload = try WireJSON.decoder().decode(WebhookPayload.self, from: Data(bytes))
            received.yield(payload)
            return Response(status: .noContent)
        }
        return Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0), serverName: "demo-partner"),
            onServerRunning: { channel in await onRunning(channel.localAddress?.port ?? 0) }, logger: logger)
    }

    static func show(_ payload: WebhookPayload) {
        let event = payload.data
        var lines = [
            "",
            "── partner received \(payload.type)  (webhook-signature verified ✓)",
            "   event       \(event.eventId)",
            "   device      \(event.deviceId)",
            "   zone        \(event.zone.name) (\(event.zone.id))",
        ]
        if let fence = event.fence {
            let shape = fence.geometry?.typeName ?? "geometry omitted"
            lines.append("   fence       \(fence.name) (\(shape)\(fence.radius.map { ", \(Int($0)) m" } ?? ""))")
        }
        lines.append("   location    \(RFC3339.format(event.location.timestamp))  lat \(event.location.lat), lon \(event.location.lon)")
        lines.append(
            "   customData  " + event.zone.customData.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ", "))
        if event.type == .checkout {
            lines.append(
                "   checkInTime \(event.checkInTime.map(RFC3339.format) ?? "-")   dwell \(Int(event.dwellSeconds ?? 0)) s   reason \(event.reason?.rawValue ?? "-")"
            )
        } else {
            lines.append("   willCheckOut \(event.willCheckOut)")
        }
        print(lines.joined(separator: "\n"))
    }
}

/// Seeds the demo project and sends the trip, as a backend team would with the API.
struct DemoScript {
    let settings: ProcessSettings
    let sealer: SecretSealer
    let logger: Logger
    static let projectId = "demo"
    /// The name the demo gives its project, by which a later demo knows the project as its own.
    static let projectName = "Demo"

    /// The demo replaces its project's zones and webhook endpoints, so it runs only with a
    /// project of that id that a demo made (or none yet): another one, made by someone with
    /// the same id, is refused before anything of it is touched.
    static func refuseAProjectNotItsOwn(settings: ProcessSettings, logger: Logger) async throws {
        let existing = try await Database.withTemporaryClient(configuration: settings.database, logger: logger) { database in
            try await ProjectStore(database: database, logger: logger).project(id: projectId)
        }
        guard let existing, existing.name != projectName else { return }
        throw CommandFailure(
            """
            project '\(projectId)' exists and was not made by checkin demo (its name is '\(existing.name)'); the demo would \
            replace its zones and remove its webhook endpoints. Run the demo with another database (CHECKIN_DATABASE_URL), \
            or keep your work in a project of another id
            """)
    }

    static let zones = ZonesDocument(zones: [
        ZoneDefinition(
            id: "harbour-cafe", name: "Harbour Café", description: "Coffee at the ferry terminal",
            customData: ["storeId": "042", "offer": "free-flat-white"], minimumRetriggerTime: 3600,
            checkOutEnabled: true,
            fences: [
                FenceDefinition(
                    id: "cafe-entrance", name: "Café entrance", geometry: .point(Position(lon: 144.9631, lat: -37.8136)),
                    radius: 60)
            ])
    ])

    /// Returns the device id the trip was sent for.
    func run(ingestPort: Int, partnerURL: String, secret: String) async throws -> String {
        let deviceKey = "ck_device_demo_" + UUID().uuidString.prefix(8).lowercased()
        try await Database.withTemporaryClient(configuration: settings.database, logger: logger) { database in
            let projects = ProjectStore(database: database, logger: logger)
            try await projects.createProject(id: Self.projectId, name: Self.projectName)
            try await projects.addKey(deviceKey, projectId: Self.projectId, kind: .device)
            try await ZoneStore(database: database, logger: logger).replaceZones(projectId: Self.projectId, with: Self.zones)
            let webhooks = WebhookStore(database: database, logger: logger, sealer: sealer)
            for old in try await webhooks.endpoints(projectId: Self.projectId) {
                try await webhooks.removeEndpoint(id: old.id, projectId: Self.projectId)
            }
            _ = try await webhooks.addEndpoint(projectId: Self.projectId, url: partnerURL, secrets: [secret])
        }
        print(
            "• demo project '\(Self.projectId)': zone 'Harbour Café' (60 m circle, customData storeId=042 offer=free-flat-white, check-out on)"
        )
        print("• partner endpoint \(partnerURL) registered with a fresh whsec_ secret")

        let deviceId = "demo-phone-" + UUID().uuidString.prefix(6).lowercased()
        // A walk from 300 m west of the café, through it, and on 300 m east: one fix every 20 s.
        let start = Date().addingTimeInterval(-600)
        let longitudes = stride(from: 144.9597, through: 144.9665, by: 0.00085).map { $0 }
        let fixes: [[String: Any]] = longitudes.enumerated().map { index, lon in
            [
                "deviceId": deviceId, "fixId": "\(deviceId)-\(index)",
                "timestamp": RFC3339.format(start.addingTimeInterval(Double(index) * 20)),
                "lat": -37.8136, "lon": lon, "accuracy": 8, "speed": 1.4, "bearing": 90, "source": "gps",
            ]
        }
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(ingestPort)/v1/fixes")
        request.method = .POST
        request.headers.add(name: "authorization", value: "Bearer \(deviceKey)")
        request.headers.add(name: "content-type", value: "application/json")
        request.body = .bytes(ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: ["fixes": fixes])))
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        let answer = try await response.body.collect(upTo: 1 << 20)
        print("• POST /v1/fixes with \(fixes.count) fixes of \(deviceId) → HTTP \(response.status.code) \(String(buffer: answer))")
        guard response.status == .accepted else { throw CommandFailure("ingest refused the trip") }
        return deviceId
    }
}
