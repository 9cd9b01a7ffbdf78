import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Ingest
import Logging
import NIOConcurrencyHelpers
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

    /// The same, under a zones quota, with the database beside the client.
    func withIngest(
        quota: ZoneQuota, _ body: @Sendable (PipelineHarness, Database, any TestClientProtocol) async throws -> Void
    ) async throws {
        let harness = PipelineHarness()
        try await harness.prepare()
        let configuration = IngestConfiguration(port: 0, topics: harness.topics, zoneQuota: quota)
        try await withIngestApplication(harness, configuration: configuration) { database, client in
            try await body(harness, database, client)
        }
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

    /// A refusal that holds for a while only (429: too soon after the last replacement) or for
    /// the resource as it was (412: `If-Match` named another version) is not kept: resent with
    /// the same key once the wait is over, or once the version is the one named, the request
    /// runs. A refusal that stays true (404) is kept and replayed.
    @Test func refusalsOfTheMomentAreNotKeptAndLastingOnesAre() async throws {
        try await withIngest(quota: ZoneQuota(minimumReplaceInterval: .seconds(3600))) { harness, database, client in
            let api = ZoneVersionTests.ZonesAPI(client: client, managementKey: harness.managementKey)
            let replayed = HTTPField.Name("Idempotent-Replayed")!
            /// As if the replace interval were over.
            @Sendable func waitOver() async throws {
                try await database.client.query(
                    "UPDATE projects SET zones_replaced_at = now() - interval '2 hours' WHERE id = \(harness.projectId)",
                    logger: harness.logger)
            }
            // The harness stored the project's zones just now.
            let tooSoon = try await api.restore("1", idempotencyKey: "soon")
            #expect(tooSoon.status == .tooManyRequests && tooSoon.headers[.retryAfter] != nil, "\(tooSoon.status)")
            try await waitOver()
            let later = try await api.restore("1", idempotencyKey: "soon")
            #expect(later.status == .ok && later.headers[replayed] == nil, "\(later.status) \(String(buffer: later.body))")
            #expect(later.headers[.eTag] == "\"2\"")

            try await waitOver()
            let ahead = try await api.restore("1", ifMatch: "\"3\"", idempotencyKey: "ahead")
            #expect(ahead.status == .preconditionFailed, "\(ahead.status)")
            #expect(try await api.restore("2").status == .ok)
            try await waitOver()
            let matching = try await api.restore("1", ifMatch: "\"3\"", idempotencyKey: "ahead")
            #expect(matching.status == .ok && matching.headers[replayed] == nil, "\(matching.status) \(String(buffer: matching.body))")
            #expect(matching.headers[.eTag] == "\"4\"")

            let missing = try await api.restore("99", idempotencyKey: "missing")
            #expect(missing.status == .notFound && missing.headers[replayed] == nil)
            let again = try await api.restore("99", idempotencyKey: "missing")
            #expect(again.status == .notFound && again.headers[replayed] == "true")
        }
    }

    /// `If-Match` is part of the request a key stands for: the same restore guarded by another
    /// version, or by none, is another request, refused as a reused key, not answered with
    /// what the first one made.
    @Test func theSameKeyWithAnotherIfMatchIsAnotherRequest() async throws {
        try await withIngest(quota: ZoneQuota()) { harness, _, client in
            let api = ZoneVersionTests.ZonesAPI(client: client, managementKey: harness.managementKey)
            let first = try await api.restore("1", ifMatch: "\"1\"", idempotencyKey: "guarded")
            #expect(first.status == .ok && first.headers[.eTag] == "\"2\"", "\(String(buffer: first.body))")
            for ifMatch in ["\"2\"", nil] {
                let other = try await api.restore("1", ifMatch: ifMatch, idempotencyKey: "guarded")
                #expect(other.status == .conflict, "\(ifMatch ?? "none"): \(other.status)")
                #expect(String(buffer: other.body).contains("idempotency-key-reused"), "\(String(buffer: other.body))")
            }
            let same = try await api.restore("1", ifMatch: "\"1\"", idempotencyKey: "guarded")
            #expect(same.status == .ok && same.headers[HTTPField.Name("Idempotent-Replayed")!] == "true")
            #expect(try await api.current().entityTag == "\"2\"")
        }
    }

    /// The query is part of the request a key stands for: a restore with another message is
    /// another request, refused as a reused key, not answered with what the first one made.
    @Test func theSameKeyWithAnotherQueryIsAnotherRequest() async throws {
        try await withIngest(quota: ZoneQuota()) { harness, _, client in
            var headers: HTTPFields = [.authorization: "Bearer \(harness.managementKey)", .contentType: "application/json"]
            headers[Self.header] = "restore-with-a-message"
            func restore(_ message: String) async throws -> TestResponse {
                try await client.execute(uri: "/v1/zones/versions/1/restore?message=\(message)", method: .post, headers: headers)
            }
            let first = try await restore("first")
            #expect(first.status == .ok, "\(String(buffer: first.body))")
            let other = try await restore("second")
            #expect(other.status == .conflict, "\(String(buffer: other.body))")
            #expect(String(buffer: other.body).contains("idempotency-key-reused"))
            let same = try await restore("first")
            #expect(same.status == .ok && same.headers[HTTPField.Name("Idempotent-Replayed")!] == "true")
        }
    }

    /// A request that runs long keeps its key: a resend while it runs is told so (409), however
    /// long ago the first began, and the request runs once.
    @Test func aResendWhileTheFirstStillRunsIsRefusedHoweverLongAgoItBegan() async throws {
        try await withIngest(quota: ZoneQuota()) { harness, database, client in
            let api = ZoneVersionTests.ZonesAPI(client: client, managementKey: harness.managementKey)
            let (scope, logger) = ("project:\(harness.projectId)", harness.logger)
            let resent = NIOLockedValueBox<HTTPResponse.Status?>(nil)
            let first = try await database.withTransaction(attempts: 1) { connection in
                // The restore waits for the project's row, which this transaction holds.
                let locked = try await connection.query(
                    "SELECT 1 FROM projects WHERE id = \(harness.projectId) FOR UPDATE", logger: logger)
                for try await _ in locked {}
                let first = Task { try await api.restore("1", idempotencyKey: "slow") }
                try await waitUntil("the restore claimed its key", within: .seconds(10)) {
                    let rows = try await database.client.query(
                        "SELECT count(*)::int FROM idempotency_keys WHERE scope = \(scope) AND key = 'slow'", logger: logger)
                    for try await count in rows.decode(Int.self) { return count == 1 }
                    return false
                }
                // As if it had been running for an hour.
                try await database.client.query(
                    "UPDATE idempotency_keys SET created_at = now() - interval '1 hour' WHERE scope = \(scope) AND key = 'slow'",
                    logger: logger)
                let resend = Task {
                    let status = try await api.restore("1", idempotencyKey: "slow").status
                    resent.withLockedValue { $0 = status }
                }
                try await waitUntil("the resend is answered", within: .seconds(10)) { resent.withLockedValue { $0 } != nil }
                _ = try await resend.value
                return first
            }
            #expect(resent.withLockedValue { $0 } == .conflict)
            let answered = try await first.value
            #expect(answered.status == .ok && answered.headers[.eTag] == "\"2\"", "\(String(buffer: answered.body))")
            let replay = try await api.restore("1", idempotencyKey: "slow")
            #expect(replay.status == .ok && replay.headers[.eTag] == "\"2\"")
            #expect(try await api.current().entityTag == "\"2\"")
        }
    }

    /// A claim is taken over only after a silence: renewed, it stays its request's however
    /// long ago that began. Given up for dead, it is no longer its first owner's, whose late
    /// release, answer or renewal leaves the new claim alone.
    @Test func aClaimTakenOverIsNoLongerTouchedByItsFirstOwner() async throws {
        let harness = PipelineHarness()
        try await harness.prepare()
        try await withMigratedDatabase(url: TestEnvironment.databaseURL, logger: harness.logger) { database in
            let store = IdempotencyStore(database: database, logger: harness.logger, sealer: harness.sealer)
            let scope = "project:\(harness.projectId)"
            let request = IdempotencyStore.Fingerprint(method: "POST", path: "/v1/keys", bodyHash: "h")
            func answer(_ text: String) -> IdempotencyStore.Answer {
                IdempotencyStore.Answer(status: 201, contentType: "application/json", location: nil, body: Array(text.utf8))
            }
            func claim() async throws -> IdempotencyStore.Claim {
                try await store.claim(scope: scope, key: "taken", fingerprint: request)
            }
            let first = try await Self.claimed(store, scope: scope, key: "taken", request)
            try await Self.age(database, scope: scope, silentFor: "1 second", logger: harness.logger)
            #expect(try await claim() == .inProgress)
            try await Self.age(database, scope: scope, silentFor: "1 hour", logger: harness.logger)
            #expect(try await store.renew(first))
            #expect(try await claim() == .inProgress)

            try await Self.age(database, scope: scope, silentFor: "1 hour", logger: harness.logger)
            let second = try await Self.claimed(store, scope: scope, key: "taken", request)
            #expect(second.token != first.token)
            // The first request, given up for dead, fails late, then answers late.
            #expect(try await !store.renew(first))
            try await store.release(first)
            #expect(try await claim() == .inProgress)
            try await store.complete(first, answer: answer(#"{"first":true}"#))
            #expect(try await claim() == .inProgress)
            try await store.complete(second, answer: answer(#"{"second":true}"#))
            #expect(try await claim() == .replay(answer(#"{"second":true}"#)))
        }
    }

    /// While its request runs, a claim held is renewed, so that it is not given up for dead
    /// however long the request takes; once it has returned, nothing renews it.
    @Test func aClaimHeldIsRenewedWhileItsRequestRuns() async throws {
        let harness = PipelineHarness()
        try await harness.prepare()
        try await withMigratedDatabase(url: TestEnvironment.databaseURL, logger: harness.logger) { database in
            let store = IdempotencyStore(database: database, logger: harness.logger, sealer: harness.sealer)
            let (scope, logger) = ("project:\(harness.projectId)", harness.logger)
            let request = IdempotencyStore.Fingerprint(method: "POST", path: "/v1/deliveries/replay", bodyHash: "h")
            let claimed = try await Self.claimed(store, scope: scope, key: "held", request)
            try await Self.age(database, scope: scope, silentFor: "1 hour", logger: logger)
            try await store.holding(claimed, renewingEvery: .milliseconds(50)) {
                try await waitUntil("the claim is renewed", within: .seconds(10)) {
                    let rows = try await database.client.query(
                        "SELECT renewed_at > now() - interval '1 minute' FROM idempotency_keys WHERE scope = \(scope)",
                        logger: logger)
                    for try await renewed in rows.decode(Bool.self) { return renewed }
                    return false
                }
                #expect(try await store.claim(scope: scope, key: "held", fingerprint: request) == .inProgress)
            }
            try await Self.age(database, scope: scope, silentFor: "1 hour", logger: logger)
            _ = try await Self.claimed(store, scope: scope, key: "held", request)
        }
    }

    /// `key` claimed by this request, or a failure saying what the claim found.
    static func claimed(
        _ store: IdempotencyStore, scope: String, key: String, _ request: IdempotencyStore.Fingerprint
    ) async throws -> IdempotencyStore.ClaimedKey {
        let claim = try await store.claim(scope: scope, key: key, fingerprint: request)
        guard case .claimed(let claimed) = claim else { throw TestFailure("\(key) is not claimed: \(claim)") }
        return claimed
    }

    /// Makes the scope's claims an hour old, last renewed `silence` (an interval) ago.
    static func age(_ database: Database, scope: String, silentFor silence: String, logger: Logger) async throws {
        try await database.client.query(
            """
            UPDATE idempotency_keys SET created_at = now() - interval '1 hour', renewed_at = now() - \(silence)::interval
            WHERE scope = \(scope)
            """, logger: logger)
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
                try await store.complete(try await Self.claimed(store, scope: scope, key: key, request), answer: answer)
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
            _ = try await Self.claimed(store, scope: scope, key: "old", request)
            #expect(try await store.purge(before: Date() - 22 * 3_600) >= 1)
            let left = try await database.client.query(
                "SELECT key FROM idempotency_keys WHERE scope = \(scope) ORDER BY key", logger: harness.logger)
            var keys: [String] = []
            for try await key in left.decode(String.self) { keys.append(key) }
            #expect(keys == ["old"])
        }
    }
}
