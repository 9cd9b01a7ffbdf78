import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import Persistence
import Shared

/// A signed webhook request, ready to go out.
struct WebhookRequest: Sendable {
    var url: String
    var headers: HTTPHeaders
    var body: [UInt8]
}

/// The notifier's own HTTP client, not the process-wide one: its connection pool allows
/// as many connections to one host as the notifier has attempts in flight (endpoints of
/// one host never queue behind each other in the pool; the scheduler limits each
/// endpoint), redirects are never followed (a 3xx is the answer), and it is shut down
/// with the notifier.
final class WebhookSender: Sendable {
    let client: HTTPClient
    let requestTimeout: Duration

    init(configuration: NotifierConfiguration) {
        var settings = HTTPClient.Configuration(
            redirectConfiguration: .disallow,
            timeout: .init(connect: .seconds(5)),
            connectionPool: .init(
                idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: configuration.concurrency),
            decompression: .disabled)
        settings.httpVersion = .http1Only
        client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: settings)
        requestTimeout = configuration.requestTimeout
    }

    /// Signs `payload` for the endpoint: the signature covers exactly the bytes sent.
    static func request(for attempt: DeliveryAttempt, now: Date = Date()) -> WebhookRequest {
        let body = Array(attempt.payload.utf8)
        let timestamp = Int(now.timeIntervalSince1970)
        let secrets = attempt.secrets.compactMap { try? WebhookSecret($0) }
        var headers = HTTPHeaders()
        headers.add(name: "content-type", value: "application/json")
        headers.add(name: "user-agent", value: "checkin-webhooks/1")
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
            let response = try await client.execute(http, timeout: .init(requestTimeout))
            // Read (and drop) the body so that the connection can serve the next request.
            _ = try? await response.body.collect(upTo: 64 * 1024)
            return WebhookResponse(
                statusCode: Int(response.status.code), retryAfter: response.headers.first(name: "retry-after"),
                location: response.headers.first(name: "location"))
        } catch {
            return WebhookResponse(error: String(describing: error))
        }
    }

    func shutdown() async {
        try? await client.shutdown()
    }
}

extension TimeAmount {
    init(_ duration: Duration) {
        self = .nanoseconds(duration.components.seconds * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000)
    }
}
