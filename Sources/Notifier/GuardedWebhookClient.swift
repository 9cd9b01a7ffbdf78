import AsyncHTTPClient
import Metrics
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Shared

/// Why the notifier did not connect to an endpoint: its URL or the address its host
/// resolved to is not allowed (see `WebhookURLPolicy`).
package struct WebhookConnectionRefused: Error, CustomStringConvertible {
    package var problem: WebhookURLProblem
    package var description: String { "not connecting: \(problem.reason)" }
}

package struct WebhookResponseError: Error, CustomStringConvertible {
    package var description: String
}

/// Sends webhook requests over HTTP/1.1 to addresses it has checked itself: it resolves
/// the host, refuses the request if any address is not public (unless the policy allows
/// private ones), and connects to exactly those checked addresses, while TLS still sends
/// the host name (SNI) and verifies the certificate for it. A general HTTP client resolves
/// names again when it connects, which leaves a DNS-rebinding window; this one has none.
/// Redirects are answers, never followed.
///
/// Connections are kept alive and reused for the same scheme, host and port (a pooled
/// connection stays bound to the address that was checked when it was opened), at most
/// `maximumIdlePerHost` idle per host (the notifier's `idleConnectionsPerHost`).
package struct GuardedWebhookClient: Sendable {
    package let policy: WebhookURLPolicy
    let resolver: any WebhookHostResolver
    let group: any EventLoopGroup
    let tlsContext: NIOSSLContext
    let pool: WebhookConnectionPool
    /// Endpoint URLs the policy allowed, parsed: every delivery to an endpoint sends to the same
    /// URL. The check depends on the URL and the policy alone (a host name's addresses are
    /// checked at each new connection); a refused URL is checked, and counted, every time.
    let allowedTargets = KeptAnswers<WebhookTarget>()
    /// A partner's answer body is read up to this size; the rest is ignored.
    let maximumResponseBytes = 64 * 1024
    /// Attempts not made because the URL or a resolved address is not allowed: an endpoint
    /// pointed (or re-pointed through DNS) at an internal address shows here.
    let refusedCounter = Counter(label: "checkin_notifier_connections_refused_total")
    /// Connections opened to partners; far fewer than deliveries while connections are reused.
    let openedCounter = Counter(label: "checkin_notifier_connections_opened_total")

    package init(
        policy: WebhookURLPolicy, resolver: any WebhookHostResolver = SystemHostResolver(),
        tlsConfiguration: TLSConfiguration = .makeClientConfiguration(),
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        maximumIdlePerHost: Int = 16, idleTimeout: TimeAmount = .seconds(10)
    ) throws {
        self.policy = policy
        self.resolver = resolver
        self.group = group
        self.tlsContext = try NIOSSLContext(configuration: tlsConfiguration)
        self.pool = WebhookConnectionPool(maximumIdlePerHost: maximumIdlePerHost, idleTimeout: idleTimeout)
    }

    /// Sends `request` and returns the partner's answer, whatever its status.
    package func execute(_ request: HTTPClientRequest, timeout: TimeAmount) async throws -> HTTPClientResponse {
        let deadline = NIODeadline.now() + timeout
        let target = try allowedTarget(request.url)
        var body = ByteBuffer()
        if let requestBody = request.body {
            for try await part in requestBody { body.writeImmutableBuffer(part) }
        }
        var headers = request.headers
        headers.replaceOrAdd(name: "host", value: target.hostHeader)
        headers.replaceOrAdd(name: "content-length", value: String(body.readableBytes))
        let head = HTTPRequestHead(version: .http1_1, method: request.method, uri: target.pathAndQuery, headers: headers)
        let exchange = Exchange(head: head, body: body)
        let key = WebhookConnectionPool.Key(target)

        if let channel = pool.take(key) {
            do {
                return try await send(exchange, on: channel, key: key, deadline: deadline)
            } catch is ClosedBeforeAnswer where NIODeadline.now() < deadline {
                // The partner closed the idle connection as this request went out: nothing was
                // answered, so the request goes again on a new connection.
            }
        }
        let addresses = try await checkedAddresses(of: target, deadline: deadline)
        var lastError: any Error = WebhookResponseError(description: "no address to connect to for \(target.host)")
        for address in addresses {
            let channel: any Channel
            do {
                channel = try await connect(to: address, target: target, deadline: deadline)
            } catch {
                lastError = error
                continue
            }
            openedCounter.increment()
            do {
                return try await send(exchange, on: channel, key: key, deadline: deadline)
            } catch is ClosedBeforeAnswer {
                throw WebhookResponseError(description: "the connection closed before an answer")
            }
        }
        throw lastError
    }

    /// Where `url` sends to, if the policy allows it: checked the first time, kept after.
    func allowedTarget(_ url: String) throws(WebhookConnectionRefused) -> WebhookTarget {
        if let target = allowedTargets.answer(to: url) { return target }
        do {
            let target = try policy.check(url)
            allowedTargets.keep(target, for: url)
            return target
        } catch {
            refusedCounter.increment()
            throw WebhookConnectionRefused(problem: error)
        }
    }

    /// Closes the idle connections.
    package func shutdown() {
        pool.closeAll()
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

    private func connect(to address: SocketAddress, target: WebhookTarget, deadline: NIODeadline) async throws -> any Channel {
        let tlsContext = target.isHTTPS ? tlsContext : nil
        // An IP literal has no name to send or verify; a host name is both the SNI and the certificate's name.
        let serverHostname = target.address == nil ? target.host : nil
        let maximumResponseBytes = maximumResponseBytes
        return try await ClientBootstrap(group: group)
            .connectTimeout(max(deadline - NIODeadline.now(), .milliseconds(1)))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let tlsContext {
                        try channel.pipeline.syncOperations.addHandler(
                            try NIOSSLClientHandler(context: tlsContext, serverHostname: serverHostname))
                    }
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(HTTPExchangeHandler(maximumResponseBytes: maximumResponseBytes))
                }
            }
            .connect(to: address).get()
    }

    /// One request and its answer on `channel`; the connection goes back to the pool when
    /// both sides mean to keep it open, and is closed otherwise.
    private func send(_ exchange: Exchange, on channel: any Channel, key: WebhookConnectionPool.Key, deadline: NIODeadline)
        async throws -> HTTPClientResponse
    {
        // The whole exchange is bounded: at the deadline the connection is closed under it.
        let timer = channel.eventLoop.scheduleTask(deadline: deadline) { channel.close(promise: nil) }
        defer { timer.cancel() }
        let answer = channel.eventLoop.makePromise(of: Answer.self)
        // The write fails only if the exchange never reached the handler (the connection was
        // torn down already); once it has, the handler alone completes the answer.
        channel.writeAndFlush(PendingExchange(exchange: exchange, answer: answer)).whenFailure { _ in
            answer.fail(ClosedBeforeAnswer())
        }
        let received: Answer
        do {
            received = try await answer.futureResult.get()
        } catch {
            channel.close(promise: nil)
            guard NIODeadline.now() < deadline else {
                throw WebhookResponseError(description: "no answer within the request timeout")
            }
            throw error
        }
        if received.keepAlive && exchange.head.isKeepAlive && channel.isActive && NIODeadline.now() < deadline {
            pool.giveBack(channel, key: key)
        } else {
            channel.close(promise: nil)
        }
        return HTTPClientResponse(
            version: received.head.version, status: received.head.status, headers: received.head.headers,
            body: .bytes(received.body))
    }
}

/// A request to write: its head and its whole body.
struct Exchange: Sendable {
    var head: HTTPRequestHead
    var body: ByteBuffer
}

/// A partner's answer, and whether the connection may serve another request.
struct Answer: Sendable {
    var head: HTTPResponseHead
    var body: ByteBuffer
    var keepAlive: Bool
}

/// The connection closed before any answer began: on a reused connection, the partner
/// closed it while idle, and the request may go again on a new one.
struct ClosedBeforeAnswer: Error {}

struct PendingExchange: Sendable {
    var exchange: Exchange
    var answer: EventLoopPromise<Answer>
}

/// Writes one request at a time and completes its promise with the answer: the final
/// (non-1xx) head and the body up to a size, read to its end so that the connection is
/// ready for the next request. An answer whose body the partner cut short by closing
/// still counts; a close before any answer fails the request.
final class HTTPExchangeHandler: ChannelDuplexHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundIn = PendingExchange
    typealias OutboundOut = HTTPClientRequestPart

    let maximumResponseBytes: Int
    private var answer: EventLoopPromise<Answer>?
    private var head: HTTPResponseHead?
    private var body = ByteBuffer()
    private var informational = false
    /// Why the connection failed (a TLS handshake refused, say), to report rather than a bare close.
    private var failure: (any Error)?

    init(maximumResponseBytes: Int) {
        self.maximumResponseBytes = maximumResponseBytes
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let pending = unwrapOutboundIn(data)
        // From here on the answer is this handler's to give, whatever happens to the writes.
        promise?.succeed(())
        guard context.channel.isActive else {
            pending.answer.fail(failure ?? ClosedBeforeAnswer())
            return
        }
        answer = pending.answer
        head = nil
        body.clear()
        informational = false
        // One flush: a partner may answer and close as soon as it has the body, and an
        // answer that came is what counts even if the last write then failed.
        context.write(wrapOutboundOut(.head(pending.exchange.head)), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(pending.exchange.body))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let answerHead):
            // 1xx answers (100 Continue) precede the real one.
            informational = (100..<200).contains(answerHead.status.code)
            if !informational { head = answerHead }
        case .body(var chunk):
            let room = maximumResponseBytes - body.readableBytes
            if room > 0, let bytes = chunk.readSlice(length: min(room, chunk.readableBytes)) {
                body.writeImmutableBuffer(bytes)
            }
        case .end:
            if informational {
                informational = false
            } else {
                finish(keepAlive: head?.isKeepAlive ?? false)
            }
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        finish(keepAlive: false)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        failure = failure ?? error
        if head == nil, let answer {
            self.answer = nil
            answer.fail(error)
        }
        context.close(promise: nil)
    }

    private func finish(keepAlive: Bool) {
        guard let answer else { return }
        self.answer = nil
        if let head {
            answer.succeed(Answer(head: head, body: body, keepAlive: keepAlive))
        } else {
            answer.fail(failure ?? ClosedBeforeAnswer())
        }
    }
}

/// Idle kept-alive connections by scheme, host and port, most recently used first.
final class WebhookConnectionPool: Sendable {
    struct Key: Hashable, Sendable {
        var isHTTPS: Bool
        var host: String
        var port: Int

        init(_ target: WebhookTarget) {
            isHTTPS = target.isHTTPS
            host = target.host.lowercased()
            port = target.port
        }
    }

    struct Idle {
        var channel: any Channel
        var since: NIODeadline

        /// Open, and not idle so long that the partner may be closing it.
        func isUsable(now: NIODeadline, idleTimeout: TimeAmount) -> Bool {
            channel.isActive && now - since < idleTimeout
        }
    }

    let maximumIdlePerHost: Int
    /// Partners close idle connections after a while (often 5–60 s); a connection idle
    /// longer than this is closed here rather than risked.
    let idleTimeout: TimeAmount
    private let idle = NIOLockedValueBox<[Key: [Idle]]>([:])

    init(maximumIdlePerHost: Int, idleTimeout: TimeAmount) {
        self.maximumIdlePerHost = maximumIdlePerHost
        self.idleTimeout = idleTimeout
    }

    /// An open idle connection for `key`, if there is one.
    func take(_ key: Key) -> (any Channel)? {
        let now = NIODeadline.now()
        var stale: [any Channel] = []
        let found = idle.withLockedValue { idle -> (any Channel)? in
            defer { if idle[key]?.isEmpty == true { idle[key] = nil } }
            while let candidate = idle[key]?.popLast() {
                if candidate.isUsable(now: now, idleTimeout: idleTimeout) { return candidate.channel }
                stale.append(candidate.channel)
            }
            return nil
        }
        stale.forEach { $0.close(promise: nil) }
        return found
    }

    func giveBack(_ channel: any Channel, key: Key) {
        let now = NIODeadline.now()
        let surplus = idle.withLockedValue { idle -> [any Channel] in
            var kept: [Idle] = []
            var closing: [any Channel] = []
            for entry in idle[key, default: []] {
                if entry.isUsable(now: now, idleTimeout: idleTimeout) { kept.append(entry) } else { closing.append(entry.channel) }
            }
            if kept.count < maximumIdlePerHost {
                kept.append(Idle(channel: channel, since: now))
            } else {
                closing.append(channel)
            }
            idle[key] = kept
            return closing
        }
        surplus.forEach { $0.close(promise: nil) }
    }

    func closeAll() {
        let all = idle.withLockedValue { idle -> [Idle] in
            defer { idle = [:] }
            return idle.values.flatMap { $0 }
        }
        all.forEach { $0.channel.close(promise: nil) }
    }
}
