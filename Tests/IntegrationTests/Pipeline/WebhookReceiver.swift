import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Shared

/// A partner endpoint for tests: verifies every signature like a partner must,
/// and keeps what it accepted (and how many it refused).
actor ReceivedWebhooks {
    private(set) var payloads: [WebhookPayload] = []
    private(set) var rejected = 0
    /// The `webhook-id` header of each accepted payload, in the same order.
    private(set) var webhookIds: [String] = []
    /// Each accepted request as signed, for checks with other secrets.
    private(set) var signed: [SignedRequest] = []
    /// Every signed request, answered 2xx or not, in arrival order.
    private(set) var requests: [ReceivedRequest] = []
    /// Requests for a webhook id that arrived while another for the same id was still being answered.
    private(set) var overlaps = 0
    /// Requests about a device that arrived while another about the same device (to this
    /// partner) was still being answered: its deliveries must go one at a time.
    private(set) var deviceOverlaps = 0
    /// The `User-Agent` of every signed request.
    private(set) var userAgents: Set<String> = []
    private var answeringDevices: [String: Int] = [:]
    /// Requests that arrived at `/elsewhere`, where the receiver redirects to.
    private(set) var redirectedArrivals = 0
    private var answering: [String: Int] = [:]
    /// How many requests arrived for each webhook id: counted as they come, since a scan of
    /// `requests` on every arrival made a burst of thousands wait on the receiver.
    private var arrivals: [String: Int] = [:]

    struct SignedRequest: Sendable {
        var id: String
        var timestamp: String
        var signature: String
        var body: [UInt8]
    }

    func accept(_ payload: WebhookPayload, id: String, signed request: SignedRequest) {
        payloads.append(payload)
        webhookIds.append(id)
        signed.append(request)
    }

    /// Notes a request's arrival; returns how many requests for this webhook id arrived so far.
    func arrived(_ payload: WebhookPayload, id: String, userAgent: String? = nil) -> Int {
        userAgents.insert(userAgent ?? "")
        if answering[id, default: 0] > 0 { overlaps += 1 }
        answering[id, default: 0] += 1
        let device = payload.data.projectId + "/" + payload.data.deviceId
        if answeringDevices[device, default: 0] > 0 { deviceOverlaps += 1 }
        answeringDevices[device, default: 0] += 1
        requests.append(ReceivedRequest(eventId: id, payload: payload, at: ContinuousClock.now))
        arrivals[id, default: 0] += 1
        return arrivals[id, default: 0]
    }

    func answered(id: String, payload: WebhookPayload) {
        answering[id, default: 1] -= 1
        answeringDevices[payload.data.projectId + "/" + payload.data.deviceId, default: 1] -= 1
    }

    func redirectedArrival() { redirectedArrivals += 1 }

    func reject() { rejected += 1 }

    /// Waits until the received payloads satisfy `condition`, or fails after `timeout`.
    func wait(
        timeout: Duration,
        until condition: @Sendable ([WebhookPayload]) -> Bool
    ) async throws {
        let deadline = ContinuousClock.now + timeout
        while !condition(payloads) {
            guard ContinuousClock.now < deadline else {
                throw TestFailure("webhooks did not arrive in \(timeout); got \(payloads.map { "\($0.type) \($0.data.deviceId)" })")
            }
            try await Task.sleep(for: .milliseconds(100))
        }
    }
}

/// One request as the receiver saw it.
struct ReceivedRequest: Sendable {
    var eventId: String
    var payload: WebhookPayload
    var at: ContinuousClock.Instant
}

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

enum WebhookReceiver {
    /// How a test partner answers a signed request, given its payload and how many requests
    /// for this webhook id arrived so far (this one included); nil accepts it with 204.
    typealias Responder = @Sendable (_ payload: WebhookPayload, _ arrival: Int) async -> Response?

    static func application(
        secret: WebhookSecret, received: ReceivedWebhooks, respond: Responder? = nil,
        onRunning: @escaping @Sendable (Int) async -> Void
    ) -> some ApplicationProtocol {
        let router = Router()
        router.post("/hooks") { request, _ -> Response in
            let bytes = Array(buffer: try await request.body.collect(upTo: 1 << 20))
            let id = request.headers[HTTPField.Name("webhook-id")!]
            let timestamp = request.headers[HTTPField.Name("webhook-timestamp")!]
            let signature = request.headers[HTTPField.Name("webhook-signature")!]
            do {
                try WebhookSignature.verify(
                    id: id, timestamp: timestamp, signatureHeader: signature, body: bytes, secret: secret)
            } catch {
                await received.reject()
                return Response(status: .unauthorized)
            }
            let payload = try WireJSON.decoder().decode(WebhookPayload.self, from: Data(bytes))
            let arrival = await received.arrived(payload, id: id ?? "", userAgent: request.headers[.userAgent])
            let answer = await respond?(payload, arrival)
            await received.answered(id: id ?? "", payload: payload)
            if let answer, !(200..<300).contains(answer.status.code) { return answer }
            await received.accept(
                payload, id: id ?? "",
                signed: .init(id: id ?? "", timestamp: timestamp ?? "", signature: signature ?? "", body: bytes))
            return answer ?? Response(status: .noContent)
        }
        router.post("/elsewhere") { _, _ -> Response in
            await received.redirectedArrival()
            return Response(status: .noContent)
        }
        var logger = Logger(label: "test.receiver")
        logger.logLevel = .warning
        return Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in await onRunning(channel.localAddress?.port ?? 0) }, logger: logger)
    }
}

/// Runs a verifying receiver, registered as `harness`'s project's endpoint, for the length
/// of `body`, which gets what it receives.
func withRegisteredReceiver(
    _ harness: PipelineHarness, respond: WebhookReceiver.Responder? = nil, _ body: (ReceivedWebhooks) async throws -> Void
) async throws {
    let received = ReceivedWebhooks()
    let receiverPort = AsyncStream.makeStream(of: Int.self)
    let receiver = WebhookReceiver.application(secret: try WebhookSecret(harness.secret), received: received, respond: respond) {
        receiverPort.continuation.yield($0)
    }
    try await withThrowingTaskGroup(of: Void.self) { tasks in
        tasks.addTask { try await receiver.run() }
        defer { tasks.cancelAll() }
        var ports = receiverPort.stream.makeAsyncIterator()
        guard let port = await ports.next() else { throw TestFailure("receiver did not start") }
        try await harness.addEndpoint(url: "http://127.0.0.1:\(port)/hooks")
        try await body(received)
    }
}
