import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Ingest
import Persistence
import Shared
import Testing

/// `Idempotency-Key` on the management API's POSTs: a resend gets the first answer and does
/// nothing again; the key reused for another request, or while its first one runs, is a 409.
@Suite struct IdempotencyTests {
    static let header = HTTPField.Name("Idempotency-Key")!

    func withIngest(_ body: @Sendable (PipelineHarness, any TestClientProtocol) async throws -> Void) async throws {
        let harness = PipelineHarness()
        try await harness.prepare()
        let configuration = IngestConfiguration(
            port: 0, topics: harness.topics, webhookURLPolicy: .local, operatorKey: ProjectKeyManagementTests.operatorKey)
        try await withIngestApplication(harness, configuration: configuration) { _, client in try await body(harness, client) }
    }

    static func post(
        _ client: any TestClientProtocol, _ uri: String, key: String, idempotencyKey: String?, _ body: String
    ) async throws -> TestResponse {
        var headers = ProjectKeyManagementTests.bearer(key, json: true)
        if let idempotencyKey { headers[header] = idempotencyKey }
        return try await client.execute(uri: uri, method: .post, headers: headers, body: ByteBuffer(string: body))
    }

    static func endpointCount(_ client: any TestClientProtocol, harness: PipelineHarness) async throws -> Int {
        let listed = try await ProjectKeyManagementTests.get(client, "/v1/webhooks", key: harness.managementKey)
        let answer = try JSONSerialization.jsonObject(with: Data(buffer: listed.body)) as? [String: Any]
        return (answer?["webhooks"] as? [Any])?.count ?? -1
    }

    @Test func twoIdenticalWebhookPostsMakeOneEndpointAndTheSameAnswer() async throws {
        try await withIngest { harness, client in
            let body = #"{"url": "http://127.0.0.1:9/idempotent"}"#
            let first = try await Self.post(client, "/v1/webhooks", key: harness.managementKey, idempotencyKey: "add-1", body)
            #expect(first.status == .created, "\(String(buffer: first.body))")
            #expect(first.headers[HTTPField.Name("Idempotent-Replayed")!] == nil)
            let second = try await Self.post(client, "/v1/webhooks", key: harness.managementKey, idempotencyKey: "add-1", body)
            #expect(second.status == .created)
            #expect(second.headers[HTTPField.Name("Idempotent-Replayed")!] == "true")
            #expect(second.headers[.contentType] == "application/json")
            // The same endpoint and the same secret: the answer, byte for byte.
            #expect(String(buffer: second.body) == String(buffer: first.body))
            #expect(try await Self.endpointCount(client, harness: harness) == 1)
            // Without the header, or with another key, the request runs again.
            _ = try await Self.post(client, "/v1/webhooks", key: harness.managementKey, idempotencyKey: "add-2", body)
            _ = try await Self.post(client, "/v1/webhooks", key: harness.managementKey, idempotencyKey: nil, body)
            #expect(try await Self.endpointCount(client, harness: harness) == 3)
        }
    }

    @Test func theSameKeyForAnotherBodyOrPathIsAConflict() async throws {
        try await withIngest { harness, client in
            let first = try await Self.post(
                client, "/v1/webhooks", key: harness.managementKey, idempotencyKey: "once", #"{"url": "http://127.0.0.1:9/a"}"#)
            #expect(first.status == .created)
            let otherBody = try await Self.post(
                client, "/v1/webhooks", key: harness.managementKey, idempotencyKey: "once", #"{"url": "http://127.0.0.1:9/b"}"#)
            #expect(otherBody.status == .conflict && otherBody.headers[.contentType] == "application/problem+json")
            #expect(String(buffer: otherBody.body).contains("idempotency-key-reused"))
            let otherPath = try await Self.post(
                client, "/v1/keys", key: harness.managementKey, idempotencyKey: "once", #"{"kind": "device"}"#)
            #expect(otherPath.status == .conflict)
            #expect(try await Self.endpointCount(client, harness: harness) == 1)
            // Another project's "once" is its own.
            let other = try await Self.post(
                client, "/v1/projects", key: ProjectKeyManagementTests.operatorKey, idempotencyKey: nil, #"{"id": "o-\#(harness.suffix)"}"#)
            let otherKey = try #require(
                ((try JSONSerialization.jsonObject(with: Data(buffer: other.body)) as? [String: Any])?["managementKey"] as? [String: Any])?[
                    "key"] as? String)
            let theirs = try await Self.post(
                client, "/v1/webhooks", key: otherKey, idempotencyKey: "once", #"{"url": "http://127.0.0.1:9/b"}"#)
            #expect(theirs.status == .created && theirs.headers[HTTPField.Name("Idempotent-Replayed")!] == nil)
        }
    }

    /// Identical requests at the same time: one runs, the others get its answer or a 409 while it runs.
    @Test func concurrentIdenticalRequestsRunOnce() async throws {
        try await withIngest { harness, client in
            let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                for _ in 0..<6 {
                    group.addTask {
                        try await Self.post(
                            client, "/v1/webhooks", key: harness.managementKey, idempotencyKey: "together",
                            #"{"url": "http://127.0.0.1:9/together"}"#
                        ).status
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses.allSatisfy { $0 == .created || $0 == .conflict }, "\(statuses)")
            #expect(statuses.contains(.created))
            #expect(try await Self.endpointCount(client, harness: harness) == 1)
        }
    }

    @Test func anEmptyOrOverlongKeyIsRefusedNamingTheHeader() async throws {
        try await withIngest { harness, client in
            for key in ["", String(repeating: "k", count: 256)] {
                let refused = try ManagementConventionsTests.problem(
                    try await Self.post(
                        client, "/v1/webhooks", key: harness.managementKey, idempotencyKey: key, #"{"url": "http://127.0.0.1:9/x"}"#))
                #expect(refused.status == .badRequest && refused.names == ["Idempotency-Key"], "\(key.count)")
            }
            let longest = try await Self.post(
                client, "/v1/webhooks", key: harness.managementKey, idempotencyKey: String(repeating: "k", count: 255),
                #"{"url": "http://127.0.0.1:9/x"}"#)
            #expect(longest.status == .created)
            #expect(try await Self.endpointCount(client, harness: harness) == 1)
        }
    }

    /// The operator's project creation too: a resend is the first answer (with the same keys), not a 409.
    /// The operator's route asked with a project's key is refused as such (401), even under a
    /// key the project used before: what was kept for the project never answers there.
    @Test func aKeyNeverAnswersForARequestItsRouteRefuses() async throws {
        try await withIngest { harness, client in
            let webhook = #"{"url": "http://127.0.0.1:9/refused"}"#
            let kept = try await Self.post(client, "/v1/webhooks", key: harness.managementKey, idempotencyKey: "used", webhook)
            #expect(kept.status == .created)
            let project = #"{"id": "refused-\#(harness.suffix)"}"#
            let refused = try await Self.post(client, "/v1/projects", key: harness.managementKey, idempotencyKey: "used", project)
            #expect(refused.status == .unauthorized, "\(refused.status) \(String(buffer: refused.body))")
        }
    }

    @Test func aResentProjectCreationGetsTheFirstAnswer() async throws {
        try await withIngest { harness, client in
            let body = #"{"id": "resent-\#(harness.suffix)"}"#
            let first = try await Self.post(client, "/v1/projects", key: ProjectKeyManagementTests.operatorKey, idempotencyKey: "p1", body)
            let second = try await Self.post(client, "/v1/projects", key: ProjectKeyManagementTests.operatorKey, idempotencyKey: "p1", body)
            #expect(first.status == .created && second.status == .created)
            #expect(String(buffer: second.body) == String(buffer: first.body))
            let third = try await Self.post(client, "/v1/projects", key: ProjectKeyManagementTests.operatorKey, idempotencyKey: "p2", body)
            #expect(third.status == .conflict)
        }
    }

    /// An answer older than the retention is forgotten: the purge deletes it, and its key
    /// claimed again runs the request again (even before a purge came by).
    @Test func answersOlderThanTheRetentionAreForgotten() async throws {
        let harness = PipelineHarness()
        try await harness.prepare()
        try await withMigratedDatabase(url: TestEnvironment.databaseURL, logger: harness.logger) { database in
            let store = IdempotencyStore(database: database, logger: harness.logger, sealer: harness.sealer)
            let scope = "project:\(harness.projectId)"
            let request = IdempotencyStore.Fingerprint(method: "POST", path: "/v1/keys", bodyHash: "h")
            let answer = IdempotencyStore.Answer(
                status: 201, contentType: "application/json", location: nil, body: Array(#"{"key":"k"}"#.utf8))
            for key in ["old", "purged"] {
                #expect(try await store.claim(scope: scope, key: key, fingerprint: request) == .claimed)
                try await store.complete(scope: scope, key: key, answer: answer)
                #expect(try await store.claim(scope: scope, key: key, fingerprint: request) == .replay(answer))
            }
            // "old" is past the retention; "purged" is 23 hours old, younger than the retention, so
            // that the retention pass of an Ingest started by another test meanwhile leaves it for
            // this test's own purge, whose cutoff is 22 hours (no other test's answers are that old).
            try await database.client.query(
                """
                UPDATE idempotency_keys
                SET created_at = now() - CASE key WHEN 'old' THEN interval '25 hours' ELSE interval '23 hours' END
                WHERE scope = \(scope)
                """, logger: harness.logger)
            #expect(try await store.claim(scope: scope, key: "old", fingerprint: request) == .claimed)
            #expect(try await store.purge(before: Date() - 22 * 3_600) >= 1)
            let left = try await database.client.query(
                "SELECT key FROM idempotency_keys WHERE scope = \(scope) ORDER BY key", logger: harness.logger)
            var keys: [String] = []
            for try await key in left.decode(String.self) { keys.append(key) }
            #expect(keys == ["old"])
        }
    }
}
