import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Ingest
import Kafka
import KafkaTesting
import Persistence
import ServiceSupport
import Shared
import Testing

/// Every route of the Ingest API answers bad bodies with a 4xx problem, never a 5xx:
/// ids with control characters, fixes from the future, oversized zones and bodies.
/// The application runs in-process against the real Postgres (and broker).
@Suite(.serialized) struct IngestLimitsTests {
    /// Answers of the test client, with the body as text.
    struct Answer {
        var status: Int
        var contentType: String?
        var body: String

        /// A 4xx with a problem body, as every refusal must be.
        var isProblem: Bool { (400..<500).contains(status) && contentType == "application/problem+json" }
    }

    /// Runs `body` against the Ingest application of a fresh project.
    func withIngest(_ body: @Sendable (PipelineHarness, _ send: Sender) async throws -> Void) async throws {
        let harness = PipelineHarness()
        try await harness.prepare()
        try await withIngestApplication(harness, configuration: IngestConfiguration(port: 0, topics: harness.topics)) { _, client in
            try await body(harness, Sender(client: client))
        }
    }

    struct Sender: Sendable {
        let client: any TestClientProtocol

        func callAsFunction(
            _ method: HTTPRequest.Method, _ uri: String, key: String, body: some Sequence<UInt8> = [UInt8]()
        ) async throws -> Answer {
            let response = try await client.execute(
                uri: uri, method: method, headers: [.authorization: "Bearer \(key)", .contentType: "application/json"],
                body: ByteBuffer(bytes: Array(body)))
            return Answer(
                status: Int(response.status.code), contentType: response.headers[.contentType],
                body: String(buffer: response.body))
        }
    }

    static func fixBatch(deviceId: String, timestamp: Date) -> [UInt8] {
        let fix: [String: Any] = [
            "deviceId": deviceId, "timestamp": RFC3339.format(timestamp), "lat": -37.81, "lon": 144.96,
        ]
        return Array(try! JSONSerialization.data(withJSONObject: ["fixes": [fix]]))
    }

    @Test func fixWithNULInItsDeviceIdIsRefusedNamingTheField() async throws {
        try await withIngest { harness, send in
            let answer = try await send(
                .post, "/v1/fixes", key: harness.deviceKey, body: Self.fixBatch(deviceId: "ph\u{0}one", timestamp: Date()))
            #expect(answer.status == 400)
            #expect(answer.isProblem)
            #expect(answer.body.contains(#""name":"fixes[0].deviceId""#))
        }
    }

    @Test func fixFromTheFarFutureIsRefusedNamingTheField() async throws {
        try await withIngest { harness, send in
            let farFuture = try #require(RFC3339.parse("9999-12-31T00:00:00Z"))
            let answer = try await send(
                .post, "/v1/fixes", key: harness.deviceKey, body: Self.fixBatch(deviceId: "phone", timestamp: farFuture))
            #expect(answer.status == 400)
            #expect(answer.body.contains(#""name":"fixes[0].timestamp""#))
            let beyondSkew = try await send(
                .post, "/v1/fixes", key: harness.deviceKey, body: Self.fixBatch(deviceId: "phone", timestamp: Date() + 600))
            #expect(beyondSkew.status == 400)
        }
    }

    /// Over 5 MB is a 413 problem on every route that takes a body.
    @Test func bodiesOverFiveMegabytesAre413Problems() async throws {
        try await withIngest { harness, send in
            let oversized = [UInt8](repeating: UInt8(ascii: " "), count: InputLimits.maximumRequestBodyBytes + 1)
            for (method, uri, key) in [
                (HTTPRequest.Method.post, "/v1/fixes", harness.deviceKey), (.put, "/v1/zones", harness.managementKey),
                (.post, "/v1/webhooks", harness.managementKey),
            ] {
                let answer = try await send(method, uri, key: key, body: oversized)
                #expect(answer.status == 413, "\(method) \(uri)")
                #expect(answer.isProblem, "\(method) \(uri)")
            }
        }
    }

    /// Malformed JSON, wrong types, NUL bytes and invalid UTF-8 are 4xx problems everywhere.
    @Test func brokenBodiesAre4xxProblemsOnEveryRoute() async throws {
        try await withIngest { harness, send in
            let bodies: [[UInt8]] = [
                Array("{".utf8), Array(#"{"fixes": "none", "zones": 7, "url": 5}"#.utf8), Array("{\"fixes\": [\0]}".utf8),
                [0x7B, 0x22, 0xFF, 0xFE, 0x22, 0x3A, 0x31, 0x7D], Array(#"[{"deviceId": {"nested": true}}]"#.utf8),
                // Escaped NULs reach the stores unless refused first: Postgres cannot hold them.
                Array(#"{"fixes": [{"deviceId": "\u0000"}], "zones": [{"id": "\u0000"}], "url": "http://partner.example/\u0000"}"#.utf8),
            ]
            for body in bodies {
                for (method, uri, key) in [
                    (HTTPRequest.Method.post, "/v1/fixes", harness.deviceKey), (.put, "/v1/zones", harness.managementKey),
                    (.post, "/v1/webhooks", harness.managementKey),
                ] {
                    let answer = try await send(method, uri, key: key, body: body)
                    #expect(answer.isProblem, "\(method) \(uri) with \(body.prefix(40)): \(answer.status) \(answer.body)")
                }
            }
        }
    }

    @Test func zoneIdWithNULAndHugeDescriptionAreRefusedNamingTheZone() async throws {
        try await withIngest { harness, send in
            var withNUL = TestTrip.zones
            withNUL.zones[0].id = "zone\u{0}cafe"
            let nul = try await send(.put, "/v1/zones", key: harness.managementKey, body: try WireJSON.encoder().encode(withNUL))
            #expect(nul.status == 400)
            #expect(nul.isProblem)
            #expect(nul.body.contains("control characters"))

            var verbose = TestTrip.zones
            verbose.zones[0].description = String(repeating: "d", count: 2_000_000)
            let huge = try await send(.put, "/v1/zones", key: harness.managementKey, body: try WireJSON.encoder().encode(verbose))
            #expect(huge.status == 400)
            #expect(huge.body.contains(#""name":"zones[zone-cafe]""#))
            #expect(huge.body.contains("description must be at most 4096 characters"))
        }
    }

    @Test func webhookURLWithNULIsRefusedNamingTheField() async throws {
        try await withIngest { harness, send in
            let body = Array(#"{"url": "https://partner.example/hook\u0000"}"#.utf8)
            let answer = try await send(.post, "/v1/webhooks", key: harness.managementKey, body: body)
            #expect(answer.status == 400)
            #expect(answer.isProblem)
            #expect(answer.body.contains(#""name":"url""#))
        }
    }
}
