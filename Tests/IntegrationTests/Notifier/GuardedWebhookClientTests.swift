import AsyncHTTPClient
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Notifier
import Shared
import Testing

/// A resolver whose answers a test decides, as a hostile DNS server would.
struct FixedResolver: WebhookHostResolver {
    let answers: [String: [String]]

    func addresses(of host: String, port: Int) async throws -> [SocketAddress] {
        guard let addresses = answers[host] else { throw HostResolutionError(host: host, reason: "unknown in this test") }
        return try addresses.map { try SocketAddress(ipAddress: $0, port: port) }
    }
}

/// What a local partner saw: the Host header of each request, by path.
actor SeenRequests {
    private(set) var hosts: [String: [String]] = [:]
    func record(path: String, host: String) { hosts[path, default: []].append(host) }
    var total: Int { hosts.values.reduce(0) { $0 + $1.count } }
}

@Suite struct GuardedWebhookClientTests {
    /// Runs a partner on 127.0.0.1 that answers /hook with 204 and /moved with a redirect to /hook.
    func withPartner(_ body: @Sendable (_ port: Int, _ seen: SeenRequests) async throws -> Void) async throws {
        let seen = SeenRequests()
        let router = Router()
        router.post("/hook") { request, _ -> Response in
            await seen.record(path: "/hook", host: request.head.authority ?? "")
            return Response(status: .noContent)
        }
        router.post("/moved") { request, _ -> Response in
            await seen.record(path: "/moved", host: request.head.authority ?? "")
            return Response(status: .found, headers: [.location: "/hook"])
        }
        var logger = Logger(label: "test.partner")
        logger.logLevel = .warning
        let ports = AsyncStream.makeStream(of: Int.self)
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { ports.continuation.yield($0.localAddress?.port ?? 0) }, logger: logger)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await app.run() }
            var iterator = ports.stream.makeAsyncIterator()
            guard let port = await iterator.next() else { throw TestFailure("the partner did not start") }
            do {
                try await body(port, seen)
            } catch {
                tasks.cancelAll()
                throw error
            }
            tasks.cancelAll()
        }
    }

    func post(_ url: String) -> HTTPClientRequest {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "content-type", value: "application/json")
        request.body = .bytes(ByteBuffer(string: #"{"type":"zone.checkin"}"#))
        return request
    }

    @Test func aNameThatResolvesToLoopbackIsRefusedAtConnectionTime() async throws {
        try await withPartner { port, seen in
            // The URL passes the check made when the endpoint is added; its DNS answer does not.
            let policy = WebhookURLPolicy(allowPrivateAddresses: false, allowHTTP: true)
            #expect(throws: Never.self) { try policy.check("http://partner.example.com:\(port)/hook") }
            let client = try GuardedWebhookClient(
                policy: policy, resolver: FixedResolver(answers: ["partner.example.com": ["127.0.0.1"]]))
            let error = await #expect(throws: WebhookConnectionRefused.self) {
                try await client.execute(post("http://partner.example.com:\(port)/hook"), timeout: .seconds(30))
            }
            #expect(error?.description.contains("partner.example.com (127.0.0.1) is a loopback address") == true)
            #expect(await seen.total == 0)
        }
    }

    /// A rebinding resolver mixes a public answer with an internal one: any internal address refuses the whole name.
    @Test func anAnswerMixingPublicAndInternalAddressesIsRefused() async throws {
        let policy = WebhookURLPolicy(allowPrivateAddresses: false, allowHTTP: true)
        let client = try GuardedWebhookClient(
            policy: policy, resolver: FixedResolver(answers: ["rebind.example.com": ["93.184.215.14", "169.254.169.254"]]))
        let error = await #expect(throws: WebhookConnectionRefused.self) {
            try await client.execute(post("http://rebind.example.com/hook"), timeout: .seconds(30))
        }
        #expect(error?.description.contains("cloud metadata") == true)
    }

    @Test func literalInternalAddressesAreRefusedAtConnectionTimeToo() async throws {
        let client = try GuardedWebhookClient(policy: WebhookURLPolicy(allowPrivateAddresses: false, allowHTTP: true))
        for url in ["http://127.0.0.1:9/hook", "http://2130706433:9/hook", "http://[::ffff:127.0.0.1]:9/hook", "https://localhost/"] {
            await #expect(throws: WebhookConnectionRefused.self, "\(url)") {
                try await client.execute(post(url), timeout: .seconds(30))
            }
        }
    }

    /// The connection goes to the address that was resolved and checked, while the
    /// request still names the host: `partner.example.com` is in no DNS.
    @Test func connectsToTheCheckedAddressAndSendsTheHostName() async throws {
        try await withPartner { port, seen in
            let client = try GuardedWebhookClient(
                policy: .local, resolver: FixedResolver(answers: ["partner.example.com": ["127.0.0.1"]]))
            let response = try await client.execute(post("http://partner.example.com:\(port)/hook"), timeout: .seconds(30))
            #expect(response.status == .noContent)
            #expect(await seen.hosts["/hook"] == ["partner.example.com:\(port)"])
        }
    }

    @Test func redirectsAreAnsweredNotFollowed() async throws {
        try await withPartner { port, seen in
            let client = try GuardedWebhookClient(policy: .local)
            let response = try await client.execute(post("http://127.0.0.1:\(port)/moved"), timeout: .seconds(30))
            #expect(response.status == .found)
            #expect(response.headers.first(name: "location") == "/hook")
            #expect(await seen.hosts["/hook"] == nil)
            #expect(await seen.hosts["/moved"]?.count == 1)
        }
    }
}
