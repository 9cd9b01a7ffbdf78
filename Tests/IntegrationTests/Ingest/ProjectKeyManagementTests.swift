import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Ingest
import Persistence
import Shared
import Testing

/// Projects created by the operator over HTTP, and a project's keys: listed by their first
/// characters only, created, revoked (at once, not after the cache's 30 s), rotated with an
/// overlap, and never down to no management key at all.
@Suite struct ProjectKeyManagementTests {
    static let operatorKey = "op_" + String(repeating: "k", count: 40)

    func withIngest(
        operatorKey: String? = Self.operatorKey, keyUsageInterval: Duration = .seconds(60),
        _ body: @Sendable (PipelineHarness, any TestClientProtocol) async throws -> Void
    ) async throws {
        let harness = PipelineHarness()
        try await harness.prepare()
        var configuration = IngestConfiguration(port: 0, topics: harness.topics, operatorKey: operatorKey)
        configuration.keyUsageInterval = keyUsageInterval
        try await withIngestApplication(harness, configuration: configuration) { _, client in try await body(harness, client) }
    }

    static func bearer(_ key: String, json: Bool = false) -> HTTPFields {
        var headers: HTTPFields = [.authorization: "Bearer \(key)"]
        if json { headers[.contentType] = "application/json" }
        return headers
    }

    static func object(_ response: TestResponse) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any])
    }

    static func post(_ client: any TestClientProtocol, _ uri: String, key: String, _ body: String = "") async throws -> TestResponse {
        try await client.execute(uri: uri, method: .post, headers: bearer(key, json: true), body: ByteBuffer(string: body))
    }

    static func get(_ client: any TestClientProtocol, _ uri: String, key: String) async throws -> TestResponse {
        try await client.execute(uri: uri, method: .get, headers: bearer(key))
    }

    /// A new key of the harness's project: its id and the key.
    static func newKey(_ client: any TestClientProtocol, harness: PipelineHarness, kind: String) async throws -> (id: String, key: String) {
        let created = try await post(client, "/v1/keys", key: harness.managementKey, #"{"kind": "\#(kind)"}"#)
        #expect(created.status == .created, "\(String(buffer: created.body))")
        let object = try object(created)
        return (try #require(object["id"] as? String), try #require(object["key"] as? String))
    }

    @Test func theOperatorCreatesAndListsProjectsAndAnExistingOneIsAConflict() async throws {
        try await withIngest { harness, client in
            let id = "made-\(harness.suffix)"
            let created = try await Self.post(client, "/v1/projects", key: Self.operatorKey, #"{"id": "\#(id)", "name": "Made"}"#)
            #expect(created.status == .created, "\(String(buffer: created.body))")
            let project = try Self.object(created)
            #expect(project["id"] as? String == id && project["name"] as? String == "Made")
            let managementKey = try #require((project["managementKey"] as? [String: Any])?["key"] as? String)
            let deviceKey = try #require((project["deviceKey"] as? [String: Any])?["key"] as? String)
            #expect(managementKey.hasPrefix("ck_management_") && deviceKey.hasPrefix("ck_device_"))
            #expect(try await Self.get(client, "/v1/zones", key: managementKey).status == .ok)

            let again = try await Self.post(client, "/v1/projects", key: Self.operatorKey, #"{"id": "\#(id)"}"#)
            #expect(again.status == .conflict)
            #expect(again.headers[.contentType] == "application/problem+json")
            let bad = try ManagementConventionsTests.problem(
                try await Self.post(client, "/v1/projects", key: Self.operatorKey, #"{"id": "no spaces please"}"#))
            #expect(bad.status == .badRequest && bad.names == ["id"])

            let listed = try Self.object(try await Self.get(client, "/v1/projects?limit=1000", key: Self.operatorKey))
            let ids = (listed["projects"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
            #expect(ids.contains(id) && ids.contains(harness.projectId), "\(ids)")
            let first = try Self.object(try await Self.get(client, "/v1/projects?limit=1", key: Self.operatorKey))
            #expect(first["hasMore"] as? Bool == true)
            let cursor = try #require(first["nextCursor"] as? String)
            let second = try Self.object(try await Self.get(client, "/v1/projects?limit=1&cursor=\(cursor)", key: Self.operatorKey))
            let secondIds = (second["projects"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
            #expect(secondIds.count == 1 && secondIds != [cursor])
            #expect(
                try ManagementConventionsTests.problem(try await Self.get(client, "/v1/projects?limit=0", key: Self.operatorKey)).names == [
                    "limit"
                ])
        }
    }

    @Test func operatorAndProjectKeysEachWorkOnlyOnTheirOwnRoutes() async throws {
        try await withIngest { harness, client in
            let byProject = try await Self.get(client, "/v1/projects", key: harness.managementKey)
            #expect(byProject.status == .unauthorized && byProject.headers[.contentType] == "application/problem+json")
            let created = try await Self.post(client, "/v1/projects", key: harness.managementKey, #"{"id": "x-\#(harness.suffix)"}"#)
            #expect(created.status == .unauthorized)
            #expect(try await Self.get(client, "/v1/keys", key: Self.operatorKey).status == .unauthorized)
            #expect(try await Self.get(client, "/v1/zones", key: Self.operatorKey).status == .unauthorized)
        }
        try await withIngest(operatorKey: nil) { harness, client in
            let off = try await Self.get(client, "/v1/projects", key: Self.operatorKey)
            #expect(off.status == .notFound && off.headers[.contentType] == "application/problem+json")
            #expect(String(buffer: off.body).contains("operator-routes-off"))
        }
    }

    @Test func keysAreListedByTheirPrefixOnlyAndANewKeyWorks() async throws {
        try await withIngest { harness, client in
            let management = try await Self.newKey(client, harness: harness, kind: "management")
            #expect(management.id.hasPrefix("key_") && management.key.hasPrefix("ck_management_"))
            #expect(try await Self.get(client, "/v1/webhooks", key: management.key).status == .ok)
            let device = try await Self.newKey(client, harness: harness, kind: "device")
            // A device key is not a management key, and is told so; nor a management key a device key.
            let wrongKind = try await Self.get(client, "/v1/webhooks", key: device.key)
            #expect(wrongKind.status == .unauthorized)
            #expect(String(buffer: wrongKind.body).contains("a device key cannot manage the project"), "\(String(buffer: wrongKind.body))")
            let fixes = try await client.execute(
                uri: "/v1/fixes", method: .post,
                headers: [.authorization: "Bearer \(management.key)", .contentType: "application/json"],
                body: ByteBuffer(string: #"{"fixes": []}"#))
            #expect(fixes.status == .unauthorized)
            #expect(String(buffer: fixes.body).contains("a management key cannot send fixes"), "\(String(buffer: fixes.body))")
            // Asked again, the refusal comes from the cache, and says the same.
            let again = try await client.execute(
                uri: "/v1/fixes", method: .post,
                headers: [.authorization: "Bearer \(management.key)", .contentType: "application/json"],
                body: ByteBuffer(string: #"{"fixes": []}"#))
            #expect(String(buffer: again.body).contains("a management key cannot send fixes"), "\(String(buffer: again.body))")

            let listed = try await Self.get(client, "/v1/keys", key: harness.managementKey)
            let text = String(buffer: listed.body)
            #expect(!text.contains(management.key) && !text.contains(device.key))
            let keys = try Self.object(listed)["keys"] as? [[String: Any]] ?? []
            let entry = try #require(keys.first { $0["id"] as? String == management.id })
            let prefix = try #require(entry["prefix"] as? String)
            #expect(management.key.hasPrefix(prefix) && prefix.count < management.key.count - 16, "\(prefix)")
            #expect(entry["kind"] as? String == "management" && entry["createdAt"] is String)
            #expect(keys.contains { $0["id"] as? String == device.id && $0["kind"] as? String == "device" })

            let bad = try ManagementConventionsTests.problem(
                try await Self.post(client, "/v1/keys", key: harness.managementKey, #"{"kind": "admin"}"#))
            #expect(bad.status == .badRequest && bad.names == ["kind"])
            // Every problem at once: a wrong kind and a misspelt member, in one answer.
            let two = try ManagementConventionsTests.problem(
                try await Self.post(client, "/v1/keys", key: harness.managementKey, #"{"kind": "admin", "knid": "device"}"#))
            #expect(two.status == .badRequest && Set(two.names) == ["kind", "knid"], "\(two.names)")
            // JSON by RFC 8259 alone: a trailing comma is not JSON.
            let trailing = try await Self.post(client, "/v1/keys", key: harness.managementKey, #"{"kind": "device",}"#)
            #expect(trailing.status == .badRequest, "\(String(buffer: trailing.body))")
            #expect(String(buffer: trailing.body).contains("not JSON"))
        }
    }

    /// A key can carry a name, listed with it and kept by its rotation; a name the API
    /// cannot take is named in the 400.
    @Test func aKeyIsListedByItsNameAndItsRotationKeepsIt() async throws {
        try await withIngest { harness, client in
            let created = try await Self.post(client, "/v1/keys", key: harness.managementKey, #"{"kind": "device", "name": "ios-app"}"#)
            #expect(created.status == .created, "\(String(buffer: created.body))")
            let made = try Self.object(created)
            #expect(made["name"] as? String == "ios-app")
            let id = try #require(made["id"] as? String)
            let rotated = try Self.object(
                try await Self.post(client, "/v1/keys/\(id)/rotate", key: harness.managementKey, #"{"overlapSeconds": 0}"#))
            #expect(rotated["name"] as? String == "ios-app")
            let listed = try Self.object(try await Self.get(client, "/v1/keys", key: harness.managementKey))["keys"] as? [[String: Any]] ?? []
            #expect(listed.filter { $0["name"] as? String == "ios-app" }.count == 2, "\(listed)")
            #expect(listed.contains { $0["kind"] as? String == "management" && $0["name"] == nil })

            let bad = try ManagementConventionsTests.problem(
                try await Self.post(client, "/v1/keys", key: harness.managementKey, #"{"kind": "device", "name": "a\u0001b"}"#))
            #expect(bad.status == .badRequest && bad.names == ["name"], "\(bad.names)")
        }
    }

    /// A key's use is written in the background, not by the request: `lastUsedAt` appears
    /// after the next round, and a key never used has none.
    @Test func aKeysLastUseIsRecordedInTheBackground() async throws {
        try await withIngest(keyUsageInterval: .milliseconds(200)) { harness, client in
            let used = try await Self.newKey(client, harness: harness, kind: "management")
            let unused = try await Self.newKey(client, harness: harness, kind: "management")
            #expect(try await Self.get(client, "/v1/zones", key: used.key).status == .ok)
            var keys: [[String: Any]] = []
            for _ in 0..<50 {
                try await Task.sleep(for: .milliseconds(100))
                keys = try Self.object(try await Self.get(client, "/v1/keys", key: harness.managementKey))["keys"] as? [[String: Any]] ?? []
                if keys.first(where: { $0["id"] as? String == used.id })?["lastUsedAt"] != nil { break }
            }
            #expect(keys.first { $0["id"] as? String == used.id }?["lastUsedAt"] is String, "\(keys)")
            #expect(keys.first { $0["id"] as? String == unused.id }?["lastUsedAt"] == nil, "\(keys)")
        }
    }

    /// Revoked through the API, a key stops at once in this process, though its answer was cached.
    @Test func aRevokedKeyIsRefusedAtOnce() async throws {
        try await withIngest { harness, client in
            let spare = try await Self.newKey(client, harness: harness, kind: "management")
            #expect(try await Self.get(client, "/v1/zones", key: spare.key).status == .ok)
            let revoked = try await client.execute(
                uri: "/v1/keys/\(spare.id)", method: .delete, headers: Self.bearer(harness.managementKey))
            #expect(revoked.status == .noContent)
            let refused = try await Self.get(client, "/v1/zones", key: spare.key)
            #expect(refused.status == .unauthorized && refused.headers[.contentType] == "application/problem+json")
            let keys = try Self.object(try await Self.get(client, "/v1/keys", key: harness.managementKey))["keys"] as? [[String: Any]] ?? []
            #expect(keys.first { $0["id"] as? String == spare.id }?["revokedAt"] is String)

            // Another project's key and an unknown one are both not found.
            let other = try await Self.post(client, "/v1/projects", key: Self.operatorKey, #"{"id": "other-\#(harness.suffix)"}"#)
            let otherKeyId = try #require((try Self.object(other)["deviceKey"] as? [String: Any])?["id"] as? String)
            for id in [otherKeyId, "key_nosuch"] {
                let missing = try await client.execute(uri: "/v1/keys/\(id)", method: .delete, headers: Self.bearer(harness.managementKey))
                #expect(missing.status == .notFound, "\(id)")
            }
        }
    }

    @Test func aRotatedKeyWorksDuringItsOverlapAndNotAfter() async throws {
        try await withIngest { harness, client in
            let old = try await Self.newKey(client, harness: harness, kind: "management")
            #expect(try await Self.get(client, "/v1/zones", key: old.key).status == .ok)
            // Long enough that the checks during the overlap end within it on a loaded machine.
            let rotated = try await Self.post(client, "/v1/keys/\(old.id)/rotate", key: harness.managementKey, #"{"overlapSeconds": 6}"#)
            #expect(rotated.status == .created, "\(String(buffer: rotated.body))")
            let answer = try Self.object(rotated)
            let new = try #require(answer["key"] as? String)
            #expect(answer["kind"] as? String == "management" && answer["replacedKeyId"] as? String == old.id)
            #expect(answer["replacedKeyExpiresAt"] is String)
            #expect(try await Self.get(client, "/v1/zones", key: old.key).status == .ok)
            #expect(try await Self.get(client, "/v1/zones", key: new).status == .ok)
            try await Task.sleep(for: .milliseconds(6500))
            #expect(try await Self.get(client, "/v1/zones", key: old.key).status == .unauthorized)
            #expect(try await Self.get(client, "/v1/zones", key: new).status == .ok)
            // An expired key is not rotated again.
            let again = try await Self.post(client, "/v1/keys/\(old.id)/rotate", key: harness.managementKey, "")
            #expect(again.status == .conflict)
            let bad = try ManagementConventionsTests.problem(
                try await Self.post(client, "/v1/keys/\(old.id)/rotate", key: harness.managementKey, #"{"overlapSeconds": -1}"#))
            #expect(bad.status == .badRequest && bad.names == ["overlapSeconds"])
        }
    }

    @Test func theLastManagementKeyCannotBeRevoked() async throws {
        try await withIngest { harness, client in
            let created = try Self.object(
                try await Self.post(client, "/v1/projects", key: Self.operatorKey, #"{"id": "alone-\#(harness.suffix)"}"#))
            let only = try #require(created["managementKey"] as? [String: Any])
            let (onlyId, onlyKey) = (try #require(only["id"] as? String), try #require(only["key"] as? String))
            func revoke(_ id: String, with key: String) async throws -> TestResponse {
                try await client.execute(uri: "/v1/keys/\(id)", method: .delete, headers: Self.bearer(key))
            }
            let refused = try await revoke(onlyId, with: onlyKey)
            #expect(refused.status == .conflict && String(buffer: refused.body).contains("last-management-key"))
            #expect(try await Self.get(client, "/v1/zones", key: onlyKey).status == .ok)

            let second = try Self.object(try await Self.post(client, "/v1/keys", key: onlyKey, #"{"kind": "management"}"#))
            let (secondId, secondKey) = (try #require(second["id"] as? String), try #require(second["key"] as? String))
            #expect(try await revoke(onlyId, with: secondKey).status == .noContent)
            #expect(try await revoke(secondId, with: secondKey).status == .conflict)
        }
    }

    /// A rotated key in its overlap stops by itself: it does not keep the project reachable,
    /// so the key that replaced it is the last one and stays; the rotated one may go.
    @Test func aRotatedKeyInItsOverlapIsNotALastingManagementKey() async throws {
        try await withIngest { harness, client in
            let created = try Self.object(
                try await Self.post(client, "/v1/projects", key: Self.operatorKey, #"{"id": "rotated-\#(harness.suffix)"}"#))
            let first = try #require(created["managementKey"] as? [String: Any])
            let (firstId, firstKey) = (try #require(first["id"] as? String), try #require(first["key"] as? String))
            let rotated = try Self.object(
                try await Self.post(client, "/v1/keys/\(firstId)/rotate", key: firstKey, #"{"overlapSeconds": 3600}"#))
            let (secondId, secondKey) = (try #require(rotated["id"] as? String), try #require(rotated["key"] as? String))
            func revoke(_ id: String, with key: String) async throws -> TestResponse {
                try await client.execute(uri: "/v1/keys/\(id)", method: .delete, headers: Self.bearer(key))
            }
            let refused = try await revoke(secondId, with: firstKey)
            #expect(refused.status == .conflict && String(buffer: refused.body).contains("last-management-key"), "\(refused.status)")
            #expect(try await Self.get(client, "/v1/zones", key: secondKey).status == .ok)

            #expect(try await revoke(firstId, with: secondKey).status == .noContent)
            #expect(try await revoke(secondId, with: secondKey).status == .conflict)
        }
    }
}

/// `checkin projects list` and `checkin keys list|create|revoke|rotate`, with an unknown
/// project or key named and a non-zero exit.
@Test func keysCommandsListCreateRevokeAndRotate() async throws {
    let harness = PipelineHarness()
    try await harness.prepare()
    let environment = ["CHECKIN_SECRET_KEY": harness.secretKey.base64]
    func run(_ arguments: [String]) async throws -> CommandOutcome {
        try await CommandOutcome.run(arguments, environment: environment)
    }
    let projects = try await run(["projects", "list"])
    #expect(projects.exitCode == 0 && projects.standardOutput.contains(harness.projectId), "\(projects.standardError)")

    let created = try await run(["keys", "create", "--project", harness.projectId, "--kind", "device"])
    #expect(created.exitCode == 0, "\(created.standardError)")
    let key = try #require(created.standardOutput.split(separator: "\n").first { $0.hasPrefix("key:") }?.split(separator: " ").last)
    let id = try #require(created.standardOutput.split(separator: "\n").first { $0.hasPrefix("id:") }?.split(separator: " ").last)
    #expect(key.hasPrefix("ck_device_") && id.hasPrefix("key_"))

    // The older spelling runs the same command, says which, and is not offered in the help.
    let older = try await run(["projects", "create-key", harness.projectId, "--kind", "management"])
    #expect(older.exitCode == 0, "\(older.standardError)")
    #expect(older.standardOutput.contains("kind: management") && older.standardOutput.contains("id:   key_"), "\(older.standardOutput)")
    #expect(older.standardError.contains("checkin keys create --project \(harness.projectId) --kind management"))
    let projectsHelp = try await run(["projects", "--help"])
    #expect(!projectsHelp.standardOutput.contains("create-key"), "\(projectsHelp.standardOutput)")

    let listed = try await run(["keys", "list", "--project", harness.projectId])
    #expect(listed.exitCode == 0 && listed.standardOutput.contains(String(id)), "\(listed.standardOutput)")
    #expect(listed.standardOutput.contains(String(key.prefix(14))) && !listed.standardOutput.contains(String(key)))

    let rotated = try await run(["keys", "rotate", "--project", harness.projectId, String(id), "--overlap", "0"])
    #expect(rotated.exitCode == 0 && rotated.standardOutput.contains("ck_device_"), "\(rotated.standardError)")
    let newId = try #require(rotated.standardOutput.split(separator: "\n").first { $0.hasPrefix("id:") }?.split(separator: " ").last)
    let revoked = try await run(["keys", "revoke", "--project", harness.projectId, String(newId)])
    #expect(revoked.exitCode == 0, "\(revoked.standardError)")
    let afterRevoke = try await run(["keys", "rotate", "--project", harness.projectId, String(newId)])
    #expect(afterRevoke.exitCode != 0 && afterRevoke.standardError.contains("revoked or expired"), "\(afterRevoke.standardError)")

    let unknownProject = try await run(["keys", "list", "--project", "nosuch-\(harness.suffix)"])
    #expect(unknownProject.exitCode != 0 && unknownProject.standardError.contains("no project 'nosuch-\(harness.suffix)'"))
    let unknownKey = try await run(["keys", "revoke", "--project", harness.projectId, "key_nosuch"])
    #expect(unknownKey.exitCode != 0 && unknownKey.standardError.contains("no key 'key_nosuch'"), "\(unknownKey.standardError)")
}
