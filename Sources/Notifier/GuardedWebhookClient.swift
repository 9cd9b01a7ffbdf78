import AsyncHTTPClient
import Metrics
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Shared

/// Why the notifier did not connect to an endpoint: its URL or the address its host
/// resolved to is not allowed (see `WebhookURLPolicy`).
public struct WebhookConnectionRefused: Error, CustomStringConvertible {
    public var problem: WebhookURLProblem
    public var description: String { "not connecting: \(problem.reason)" }
}

public struct WebhookResponseError: Error, CustomStringConvertible {
    public var description: String
}

/// Sends one webhook request over HTTP/1.1 to an address it has checked itself:
/// it resolves the host, refuses the request if any address is not public (unless
/// the policy allows private ones), and connects to exactly those checked addresses,
/// while TLS still sends the host name (SNI) and verifies the certificate for it.
/// A general HTTP client resolves names again when it connects, which leaves a
/// DNS-rebinding window; this one has none. Redirects are answers, never followed.
/// One connection per request (`connection: close`).
public struct GuardedWebhookClient: Sendable {
    public let policy: WebhookURLPolicy
    let resolver: any WebhookHostResolver
    let group: any EventLoopGroup
    let tlsContext: NIOSSLContext
    /// A partner's answer body is read up to this size; the rest is ignored.
    let maximumResponseBytes = 64 * 1024
    /// Attempts not made because the URL or a resolved address is not allowed: an endpoint
    /// pointed (or re-pointed through DNS) at an internal address shows here.
    let refusedCounter = Counter(label: "checkin_notifier_connections_refused_total")

    public init(
        policy: WebhookURLPolicy, resolver: any WebhookHostResolver = SystemHostResolver(),
        tlsConfiguration: TLSConfiguration = .makeClientConfiguration(),
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) throws {
        self.policy = policy
        self.resolver = resolver
        self.group = group
        self.tlsContext = try NIOSSLContext(configuration: tlsConfiguration)
    }

    /// Sends `request` and returns the partner's answer, whatever its status.
    public func execute(_ request: HTTPClientRequest, timeout: TimeAmount) async throws -> HTTPClientResponse {
        let deadline = NIODeadline.now() + timeout
        let target: WebhookTarget
        do {
            target = try policy.check(request.url)
        } catch {
            refusedCounter.increment()
            throw WebhookConnectionRefused(problem: error)
        }
        let addresses = try await checkedAddresses(of: target, deadline: deadline)
        var body = ByteBuffer()
        if let requestBody = request.body {
            for try await part in requestBody { body.writeImmutableBuffer(part) }
        }
        var headers = request.headers
        headers.replaceOrAdd(name: "host", value: target.hostHeader)
        headers.replaceOrAdd(name: "content-length", value: String(body.readableBytes))
        headers.replaceOrAdd(name: "connection", value: "close")
        let head = HTTPRequestHead(version: .http1_1, method: request.method, uri: target.pathAndQuery, headers: headers)

        var lastError: any Error = WebhookResponseError(description: "no address to connect to for \(target.host)")
        for address in addresses {
            let channel: NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>
            do {
                channel = try await connect(to: address, target: target, deadline: deadline)
            } catch {
                lastError = error
                continue
            }
            return try await exchange(head: head, body: body, on: channel, deadline: deadline)
        }
        throw lastError
    }

    /// The addresses to connect to, every one of them allowed by the policy.
    func checkedAddresses(of target: WebhookTarget, deadline: NIODeadline) async throws -> [SocketAddress] {
        if let literal = target.address {
            return [try SocketAddress(ipAddress: literal.description, port: target.port)]
        }
        let resolved = try await resolve(target, deadline: deadline)
        for address in resolved {
            guard let text = address.ipAddress, let ip = IPAddress(host: text) else {
                refusedCounter.increment()
                throw WebhookConnectionRefused(problem: WebhookURLProblem("\(target.host) resolved to \(address), not an IP address"))
            }
            do {
                try policy.checkAddress(ip, of: target.host)
            } catch {
                refusedCounter.increment()
                throw WebhookConnectionRefused(problem: error)
            }
        }
        return resolved
    }

    /// A lookup that outlives the request's deadline is abandoned (its thread finishes on its own).
    private func resolve(_ target: WebhookTarget, deadline: NIODeadline) async throws -> [SocketAddress] {
        let resolver = resolver
        return try await withThrowingTaskGroup(of: [SocketAddress].self) { tasks in
            tasks.addTask { try await resolver.addresses(of: target.host, port: target.port) }
            tasks.addTask {
                let remaining = deadline - NIODeadline.now()
                try await Task.sleep(for: .nanoseconds(max(remaining.nanoseconds, 0)))
                throw HostResolutionError(host: target.host, reason: "no answer within the request timeout")
            }
            defer { tasks.cancelAll() }
            guard let addresses = try await tasks.next() else { throw CancellationError() }
            return addresses
        }
    }

    private func connect(
        to address: SocketAddress, target: WebhookTarget, deadline: NIODeadline
    ) async throws -> NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart> {
        let tlsContext = target.isHTTPS ? tlsContext : nil
        // An IP literal has no name to send or verify; a host name is both the SNI and the certificate's name.
        let serverHostname = target.address == nil ? target.host : nil
        return try await ClientBootstrap(group: group)
            .connectTimeout(max(deadline - NIODeadline.now(), .milliseconds(1)))
            .connect(to: address) { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let tlsContext {
                        try channel.pipeline.syncOperations.addHandler(
                            try NIOSSLClientHandler(context: tlsContext, serverHostname: serverHostname))
                    }
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    return try NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>(wrappingChannelSynchronously: channel)
                }
            }
    }

    private func exchange(
        head: HTTPRequestHead, body: ByteBuffer, on channel: NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>,
        deadline: NIODeadline
    ) async throws -> HTTPClientResponse {
        // The whole exchange is bounded: at the deadline the connection is closed under the reader.
        let timer = channel.channel.eventLoop.scheduleTask(deadline: deadline) { channel.channel.close(promise: nil) }
        defer { timer.cancel() }
        let maximumResponseBytes = maximumResponseBytes
        do {
            return try await channel.executeThenClose { inbound, outbound in
                // One write: a partner may answer and close as soon as it has the body, and an
                // answer that came is what counts even if the last write then failed.
                var writeError: (any Error)?
                do {
                    try await outbound.write(contentsOf: [.head(head), .body(.byteBuffer(body)), .end(nil)])
                } catch {
                    writeError = error
                }
                var response: HTTPResponseHead?
                var informational = false
                var received = ByteBuffer()
                reading: for try await part in inbound {
                    switch part {
                    case .head(let answer):
                        // 1xx answers (100 Continue) precede the real one.
                        informational = (100..<200).contains(answer.status.code)
                        if !informational { response = answer }
                    case .body(var chunk):
                        let room = maximumResponseBytes - received.readableBytes
                        if room > 0, let bytes = chunk.readSlice(length: min(room, chunk.readableBytes)) {
                            received.writeImmutableBuffer(bytes)
                        }
                    case .end:
                        if informational {
                            informational = false
                        } else {
                            break reading
                        }
                    }
                }
                guard let response else {
                    throw writeError ?? WebhookResponseError(description: "the connection closed before an answer")
                }
                return HTTPClientResponse(
                    version: response.version, status: response.status, headers: response.headers, body: .bytes(received))
            }
        } catch {
            guard NIODeadline.now() < deadline else {
                throw WebhookResponseError(description: "no answer within the request timeout")
            }
            throw error
        }
    }
}
