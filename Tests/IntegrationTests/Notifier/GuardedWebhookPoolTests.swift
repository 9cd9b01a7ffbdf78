import AsyncHTTPClient
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import Notifier
import Testing

/// How a test partner treats its connections.
enum PartnerConnectionHabit: Sendable {
    /// Answers every request and keeps the connection open.
    case keepAlive
    /// Answers with `connection: close` and closes.
    case closeAfterEachAnswer
    /// Answers the first request of a connection, then closes the connection when the
    /// second one arrives, without answering it (a partner's idle timeout racing a request).
    case dropSecondRequest
    /// Closes every connection as soon as it is accepted (a TLS or proxy failure looks alike).
    case closeAtOnce
}

/// A partner on 127.0.0.1 written against NIO directly, so that a test decides what
/// happens to each connection; it counts connections and answered requests.
final class ConnectionCountingPartner: Sendable {
    let habit: PartnerConnectionHabit
    private let counts = NIOLockedValueBox((connections: 0, answered: 0, dropped: 0))
    private let channel: any Channel

    var connections: Int { counts.withLockedValue { $0.connections } }
    var answered: Int { counts.withLockedValue { $0.answered } }
    var dropped: Int { counts.withLockedValue { $0.dropped } }
    var port: Int { channel.localAddress?.port ?? 0 }

    init(habit: PartnerConnectionHabit) async throws {
        self.habit = habit
        let counts = counts
        channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                counts.withLockedValue { $0.connections += 1 }
                if habit == .closeAtOnce { return channel.close() }
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(PartnerHandler(habit: habit, counts: counts))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
    }

    func stop() async throws { try await channel.close() }

    final class PartnerHandler: ChannelInboundHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart
        let habit: PartnerConnectionHabit
        let counts: NIOLockedValueBox<(connections: Int, answered: Int, dropped: Int)>
        var requestsOnThisConnection = 0

        init(habit: PartnerConnectionHabit, counts: NIOLockedValueBox<(connections: Int, answered: Int, dropped: Int)>) {
            self.habit = habit
            self.counts = counts
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard case .end = unwrapInboundIn(data) else { return }
            requestsOnThisConnection += 1
            if habit == .dropSecondRequest && requestsOnThisConnection == 2 {
                counts.withLockedValue { $0.dropped += 1 }
                context.close(promise: nil)
                return
            }
            counts.withLockedValue { $0.answered += 1 }
            var headers = HTTPHeaders([("content-length", "2")])
            if habit == .closeAfterEachAnswer { headers.add(name: "connection", value: "close") }
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))), promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: "ok")))), promise: nil)
            let close = habit == .closeAfterEachAnswer
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in
                if close { context.close(promise: nil) }
            }
        }
    }
}

@Suite struct GuardedWebhookPoolTests {
    func post(_ port: Int) -> HTTPClientRequest {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/hook")
        request.method = .POST
        request.headers.add(name: "content-type", value: "application/json")
        request.body = .bytes(ByteBuffer(string: #"{"type":"zone.checkin"}"#))
        return request
    }

    @Test func aKeptAliveConnectionServesTheNextRequests() async throws {
        let partner = try await ConnectionCountingPartner(habit: .keepAlive)
        let client = try GuardedWebhookClient(policy: .local)
        for _ in 0..<10 {
            let response = try await client.execute(post(partner.port), timeout: .seconds(10))
            #expect(response.status == .ok)
        }
        #expect(partner.answered == 10)
        #expect(partner.connections == 1)
        client.shutdown()
        try await partner.stop()
    }

    @Test func aPartnerThatClosesGetsANewConnectionEachTime() async throws {
        let partner = try await ConnectionCountingPartner(habit: .closeAfterEachAnswer)
        let client = try GuardedWebhookClient(policy: .local)
        for _ in 0..<3 {
            let response = try await client.execute(post(partner.port), timeout: .seconds(10))
            #expect(response.status == .ok)
        }
        #expect(partner.answered == 3)
        #expect(partner.connections == 3)
        try await partner.stop()
    }

    /// The partner closes a kept-alive connection as the next request arrives: that request
    /// was never answered, so it goes again on a new connection and is answered there.
    @Test func aRequestLostToAnIdleCloseGoesAgainOnANewConnection() async throws {
        let partner = try await ConnectionCountingPartner(habit: .dropSecondRequest)
        let client = try GuardedWebhookClient(policy: .local)
        let first = try await client.execute(post(partner.port), timeout: .seconds(10))
        let second = try await client.execute(post(partner.port), timeout: .seconds(10))
        #expect(first.status == .ok)
        #expect(second.status == .ok)
        #expect(partner.dropped == 1)
        #expect(partner.answered == 2)
        #expect(partner.connections == 2)
        client.shutdown()
        try await partner.stop()
    }

    /// A connection closed before the request could be written fails the attempt at once,
    /// never leaves it waiting.
    @Test(.timeLimit(.minutes(1))) func aConnectionClosedAtOnceFailsTheRequest() async throws {
        let partner = try await ConnectionCountingPartner(habit: .closeAtOnce)
        let client = try GuardedWebhookClient(policy: .local)
        for _ in 0..<20 {
            await #expect(throws: (any Error).self) {
                try await client.execute(post(partner.port), timeout: .seconds(600))
            }
        }
        try await partner.stop()
    }

    /// Connections idle past the idle timeout are not reused.
    @Test func aConnectionIdleTooLongIsNotReused() async throws {
        let partner = try await ConnectionCountingPartner(habit: .keepAlive)
        let client = try GuardedWebhookClient(policy: .local, idleTimeout: .milliseconds(200))
        _ = try await client.execute(post(partner.port), timeout: .seconds(10))
        try await Task.sleep(for: .milliseconds(400))
        _ = try await client.execute(post(partner.port), timeout: .seconds(10))
        #expect(partner.answered == 2)
        #expect(partner.connections == 2)
        client.shutdown()
        try await partner.stop()
    }
}
