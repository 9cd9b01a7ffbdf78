import NIOCore
import NIOHTTP1
import NIOPosix

/// The load tool's partner as a bare HTTP/1.1 server on this machine: each request's
/// body is gathered and handed, with its path and headers, to `answer` on the connection's
/// event loop, and the status it returns is sent with an empty body (the connection kept
/// alive). It shares the two cores with the pipeline it measures, so it does no more than
/// a partner must.
struct LoadPartnerServer: Sendable {
    typealias Answer = @Sendable (_ path: String, _ headers: HTTPHeaders, _ body: ByteBuffer) -> HTTPResponseStatus

    private let channel: any Channel

    var port: Int { channel.localAddress?.port ?? 0 }

    static func start(answer: @escaping Answer) async throws -> LoadPartnerServer {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(RequestHandler(answer: answer))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return LoadPartnerServer(channel: channel)
    }

    func stop() async throws {
        try await channel.close()
    }

    private final class RequestHandler: ChannelInboundHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart

        let answer: Answer
        var head: HTTPRequestHead?
        var body: ByteBuffer?

        init(answer: @escaping Answer) {
            self.answer = answer
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head):
                self.head = head
                body = context.channel.allocator.buffer(capacity: 1024)
            case .body(var part):
                body?.writeBuffer(&part)
            case .end:
                guard let head else { return }
                let status = answer(head.uri, head.headers, body ?? ByteBuffer())
                let keepAlive = head.isKeepAlive
                var headers = HTTPHeaders()
                headers.add(name: "content-length", value: "0")
                if !keepAlive { headers.add(name: "connection", value: "close") }
                context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: status, headers: headers))), promise: nil)
                context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in
                    if !keepAlive { context.close(promise: nil) }
                }
                self.head = nil
                body = nil
            }
        }
    }
}
