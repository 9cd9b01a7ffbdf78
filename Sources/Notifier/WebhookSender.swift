import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import Persistence
import ServiceSupport
import Shared

/// A signed webhook request, ready to go out.
struct WebhookRequest: Sendable {
    var url: String
    var headers: HTTPHeaders
    var body: [UInt8]
}

/// Sends through the notifier's own client (``GuardedWebhookClient``), not the
/// process-wide one: it resolves each endpoint's host itself, connects only to the
/// addresses the URL policy allows (checked after resolution, so no DNS rebinding
/// window), and never follows a redirect (a 3xx is the answer).
final class WebhookSender: Sendable {
    let client: GuardedWebhookClient
    let requestTimeout: Duration

    init(configuration: NotifierConfiguration, client: GuardedWebhookClient) {
        self.client = client
        requestTimeout = configuration.requestTimeout
    }

    /// Signs `payload` for the endpoint: the signature covers exactly the bytes sent.
    static func request(for attempt: DeliveryAttempt, now: Date = Date()) -> WebhookRequest {
        let body = Array(attempt.payload.utf8)
        let timestamp = Int(now.timeIntervalSince1970)
        let secrets = attempt.secrets.compactMap { try? WebhookSecret($0) }
        var headers = HTTPHeaders()
        headers.add(name: "content-type", value: "application/json")
        headers.add(name: "user-agent", value: Release.webhookUserAgent)
        headers.add(name: WebhookSignature.idHeader, value: attempt.eventId)
        headers.add(name: WebhookSignature.timestampHeader, value: String(timestamp))
        headers.add(
            name: WebhookSignature.signatureHeader,
            value: WebhookSignature.header(id: attempt.eventId, timestamp: timestamp, body: body, secrets: secrets))
        return WebhookRequest(url: attempt.url, headers: headers, body: body)
    }

    /// The one place a webhook goes over the network: request in, answer (or error) out.
    func send(_ request: WebhookRequest) async -> WebhookResponse {
        var http = HTTPClientRequest(url: request.url)
        http.method = .POST
        http.headers = request.headers
        http.body = .bytes(ByteBuffer(bytes: request.body))
        do {
            // The client has read the answer to its end already (its body is not looked at).
            let response = try await client.execute(http, timeout: .init(requestTimeout))
            return WebhookResponse(
                statusCode: Int(response.status.code), retryAfter: response.headers.first(name: "retry-after"),
                location: response.headers.first(name: "location"))
        } catch {
            return WebhookResponse(error: NetworkErrorText.describe(error))
        }
    }
}

extension TimeAmount {
    init(_ duration: Duration) {
        self = .nanoseconds(duration.components.seconds * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000)
    }
}
