import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Ingest
import Kafka
import KafkaTesting
import Persistence
import PostgresNIO
import ServiceSupport
import Shared
import Testing

/// API keys: known keys stay cached whatever unknown keys arrive, and a client that
/// keeps sending unknown keys is slowed down without slowing anyone's valid requests.
@Suite(.serialized) struct APIKeyTests {
    /// Runs `body` against the Ingest application of a fresh project, served as `target`.
    func withIngest(
        _ target: TestingSetup, authFailuresPerMinute: Int,
        _ body: @Sendable (PipelineHarness, Database, any TestClientProtocol) async throws -> Void
    ) async throws {
        let harness = PipelineHarness()
        try await harness.prepare()
        // Known keys stay known for the whole test, however slow the machine.
        let configuration = IngestConfiguration(
            port: 0, topics: harness.topics, authFailuresPerMinute: authFailuresPerMinute, apiKeyCacheTimeToLive: .seconds(600))
        try await withIngestApplication(harness, configuration: configuration, target: target) { database, client in
            try await body(harness, database, client)
        }
    }

    static func zones(_ client: any TestClientProtocol, key: String?) async throws -> TestResponse {
        try await client.execute(
            uri: "/v1/zones", method: .get, headers: key.map { [.authorization: "Bearer \($0)"] } ?? [:])
    }

    /// More made-up keys than the cache holds must not push out a valid one: once known,
    /// it keeps working without Postgres (here, where it no longer is) until it expires.
    @Test func unknownKeysNeverEvictAKnownOne() async throws {
        try await withIngest(.router, authFailuresPerMinute: 0) { harness, database, client in
            #expect(try await Self.zones(client, key: harness.managementKey).status == .ok)
            try await database.client.query(
                "DELETE FROM api_keys WHERE project_id = \(harness.projectId) AND kind = 'management'", logger: harness.logger)
            let flood = 10_001
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                for worker in 0..<16 {
                    tasks.addTask {
                        for index in stride(from: worker, to: flood, by: 16) {
                            let status = try await Self.zones(client, key: "ck_made_up_\(index)_\(UUID().uuidString)").status
                            if status != .unauthorized { throw TestFailure("a made-up key was answered \(status)") }
                        }
                    }
                }
                try await tasks.waitForAll()
            }
            #expect(try await Self.zones(client, key: harness.managementKey).status == .ok)
        }
    }

    /// A client over its limit of failures is answered 429 with Retry-After; a valid key,
    /// and other clients, are not held up.
    @Test func failedAuthenticationsAreLimitedPerClient() async throws {
        try await withIngest(.live, authFailuresPerMinute: 3) { harness, _, client in
            #expect(try await Self.zones(client, key: harness.managementKey).status == .ok)
            for attempt in 0..<3 {
                let refused = try await Self.zones(client, key: attempt == 0 ? nil : "ck_wrong_\(attempt)")
                #expect(refused.status == .unauthorized)
            }
            for key in ["ck_wrong_again", nil] {
                let limited = try await Self.zones(client, key: key)
                #expect(limited.status == .tooManyRequests)
                #expect(limited.headers[.contentType] == "application/problem+json")
                let retryAfter = try #require(limited.headers[.retryAfter].flatMap { Int($0) })
                #expect((1...20).contains(retryAfter))
                #expect(String(buffer: limited.body).contains("too-many-authentication-failures"))
            }
            #expect(try await Self.zones(client, key: harness.managementKey).status == .ok)
        }
    }
}
