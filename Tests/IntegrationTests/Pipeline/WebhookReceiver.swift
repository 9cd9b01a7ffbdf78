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

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

enum WebhookReceiver {
    static func application(
        secret: WebhookSecret, received: ReceivedWebhooks, onRunning: @escaping @Sendable (Int) async -> Void
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
            await received.accept(
                payload, id: id ?? "",
                signed: .init(id: id ?? "", timestamp: timestamp ?? "", signature: signature ?? "", body: bytes))
            return Response(status: .noContent)
        }
        var logger = Logger(label: "test.receiver")
        logger.logLevel = .warning
        return Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in await onRunning(channel.localAddress?.port ?? 0) }, logger: logger)
    }
}
