import AsyncHTTPClient
import Foundation
import Hummingbird
import HummingbirdTesting
import Ingest
import NIOCore
import NIOHTTP1
import Testing

/// HEAD is answered wherever GET is, as GET would be but without the body: the same status
/// and headers (`Content-Length` and `ETag` included). A refusal's body is left out too, so
/// the kept-alive connection it came on serves the next request.
@Suite struct HeadRequestTests {
    @Test func headIsGetWithoutTheBodyAndLeavesTheConnectionUsable() async throws {
        let harness = PipelineHarness()
        try await harness.prepare()
        let configuration = IngestConfiguration(port: 0, topics: harness.topics)
        try await withIngestApplication(harness, configuration: configuration, target: .live) { _, client in
            let port = try #require(client.port)
            // One connection for every request, so that a body left after a HEAD answer would
            // be read as the next answer.
            var settings = HTTPClient.Configuration()
            settings.connectionPool = .init(idleTimeout: .seconds(30), concurrentHTTP1ConnectionsPerHostSoftLimit: 1)
            let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: settings)
            func send(_ method: HTTPMethod, _ path: String, key: String? = nil) async throws -> (HTTPClientResponse, ByteBuffer) {
                var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)")
                request.method = method
                if let key { request.headers.add(name: "authorization", value: "Bearer \(key)") }
                let response = try await http.execute(request, timeout: .seconds(10))
                return (response, try await response.body.collect(upTo: 1 << 20))
            }
            for (path, key) in [("/v1/zones", harness.managementKey), ("/v1/webhooks", harness.managementKey), ("/ready", nil)] {
                let (got, gotBody) = try await send(.GET, path, key: key)
                let (head, headBody) = try await send(.HEAD, path, key: key)
                #expect(head.status == got.status, "\(path)")
                #expect(headBody.readableBytes == 0, "\(path)")
                #expect(head.headers.first(name: "content-length") == String(gotBody.readableBytes), "\(path)")
                #expect(head.headers.first(name: "etag") == got.headers.first(name: "etag"), "\(path)")
                #expect(head.headers.first(name: "content-type") == got.headers.first(name: "content-type"), "\(path)")
            }
            // Refusals: no key, a path that takes POST alone, a path there is not.
            let (unauthorized, unauthorizedBody) = try await send(.HEAD, "/v1/zones")
            #expect(unauthorized.status == .unauthorized && unauthorizedBody.readableBytes == 0)
            let (wrongMethod, _) = try await send(.HEAD, "/v1/fixes")
            #expect(wrongMethod.status == .methodNotAllowed && wrongMethod.headers.first(name: "allow") == "POST")
            let (allowed, _) = try await send(.DELETE, "/v1/zones/versions", key: harness.managementKey)
            #expect(allowed.headers.first(name: "allow") == "GET, HEAD")
            let (missing, missingBody) = try await send(.HEAD, "/v1/nothing-here")
            #expect(missing.status == .notFound && missingBody.readableBytes == 0)
            // And the connection still answers in step.
            let (after, afterBody) = try await send(.GET, "/health")
            #expect(after.status == .ok && String(buffer: afterBody).contains("ok"), "\(String(buffer: afterBody))")
            try await http.shutdown()
        }
    }
}
