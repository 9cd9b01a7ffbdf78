import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Ingest
import Persistence
import Shared
import Testing

/// A project's zones are a versioned resource: every accepted document is a numbered version,
/// readable and restorable; `ETag` names the current one, `If-Match` guards a replacement
/// against someone else's in between, and a dry run says what a replacement would change.
@Suite struct ZoneVersionTests {
    /// The zones routes of a project, through the API.
    struct ZonesAPI: Sendable {
        let client: any TestClientProtocol
        let managementKey: String

        func execute(
            _ uri: String, method: HTTPRequest.Method, ifMatch: String? = nil, body: String? = nil
        ) async throws -> TestResponse {
            var headers: HTTPFields = [.authorization: "Bearer \(managementKey)", .contentType: "application/json"]
            if let ifMatch { headers[.ifMatch] = ifMatch }
            return try await client.execute(uri: uri, method: method, headers: headers, body: body.map { ByteBuffer(string: $0) })
        }

        func get(_ uri: String) async throws -> TestResponse { try await execute(uri, method: .get) }

        func put(_ document: ZonesDocument, query: String = "", ifMatch: String? = nil) async throws -> TestResponse {
            let body = String(decoding: try WireJSON.encoder().encode(document), as: UTF8.self)
            return try await execute("/v1/zones" + query, method: .put, ifMatch: ifMatch, body: body)
        }

        func restore(_ version: String, ifMatch: String? = nil, idempotencyKey: String? = nil) async throws -> TestResponse {
            var headers: HTTPFields = [.authorization: "Bearer \(managementKey)", .contentType: "application/json"]
            if let ifMatch { headers[.ifMatch] = ifMatch }
            if let idempotencyKey { headers[HTTPField.Name("Idempotency-Key")!] = idempotencyKey }
            return try await client.execute(uri: "/v1/zones/versions/\(version)/restore", method: .post, headers: headers)
        }

        /// The project's current zones and their `ETag`.
        func current() async throws -> (document: ZonesDocument, entityTag: String?) {
            let answer = try await get("/v1/zones")
            #expect(answer.status == .ok, "\(String(buffer: answer.body))")
            return (try ZoneVersionTests.document(answer), answer.headers[.eTag])
        }
    }

    /// Runs `body` against the Ingest application of a fresh project (whose zones, the trip's,
    /// are its version 1) under `quota`.
    func withZonesAPI(
        quota: ZoneQuota = ZoneQuota(), _ body: @Sendable (PipelineHarness, Database, ZonesAPI) async throws -> Void
    ) async throws {
        let harness = PipelineHarness()
        try await harness.prepare()
        let configuration = IngestConfiguration(port: 0, topics: harness.topics, zoneQuota: quota)
        try await withIngestApplication(harness, configuration: configuration) { database, client in
            try await body(harness, database, ZonesAPI(client: client, managementKey: harness.managementKey))
        }
    }

    static func object(_ response: TestResponse) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any])
    }

    static func document(_ response: TestResponse) throws -> ZonesDocument {
        try WireJSON.decoder().decode(ZonesDocument.self, from: Data(buffer: response.body))
    }

    /// A zone with one 50 m circle `metresEast` of the trip's centre.
    static func zone(_ id: String, metresEast: Double, name: String? = nil) -> ZoneDefinition {
        let metresPerDegreeLon = 111_320 * cos(TestTrip.centre.lat * .pi / 180)
        let centre = Position(lon: TestTrip.centre.lon + metresEast / metresPerDegreeLon, lat: TestTrip.centre.lat)
        return ZoneDefinition(
            id: id, name: name ?? id, fences: [FenceDefinition(id: "\(id)-door", geometry: .point(centre), radius: 50)])
    }

    /// Three zones kilometres apart (no lint warnings).
    static let threeZones = ZonesDocument(zones: [
        zone("zone-cafe", metresEast: 0), zone("zone-old", metresEast: 5_000), zone("zone-kept", metresEast: 10_000),
    ])

    @Test func versionsAreNumberedListedNewestFirstAndReadable() async throws {
        try await withZonesAPI { _, _, api in
            #expect(try await api.current().entityTag == "\"1\"")
            let second = try await api.put(Self.threeZones)
            #expect(second.status == .ok, "\(String(buffer: second.body))")
            #expect(second.headers[.eTag] == "\"2\"")
            #expect(try Self.object(second)["version"] as? Int == 2)
            let third = try await api.put(ZonesDocument(zones: [Self.zone("zone-new", metresEast: 0)]))
            #expect(try Self.object(third)["version"] as? Int == 3 && third.headers[.eTag] == "\"3\"")
            #expect(try await api.current().entityTag == "\"3\"")

            var versions: [[String: Any]] = []
            var pages: [Bool] = []
            var cursor: String?
            repeat {
                let page = try Self.object(try await api.get("/v1/zones/versions?limit=2" + (cursor.map { "&cursor=\($0)" } ?? "")))
                versions += page["versions"] as? [[String: Any]] ?? []
                pages.append(page["hasMore"] as? Bool ?? false)
                cursor = page["nextCursor"] as? String
            } while cursor != nil && pages.count < 10
            #expect(versions.compactMap { $0["version"] as? Int } == [3, 2, 1])
            #expect(versions.compactMap { $0["zoneCount"] as? Int } == [1, 3, 1])
            #expect(versions.allSatisfy { ($0["createdAt"] as? String).flatMap(RFC3339.parse) != nil }, "\(versions)")
            #expect(pages == [true, false])

            let readBack = try await api.get("/v1/zones/versions/2")
            #expect(readBack.status == .ok && readBack.headers[.eTag] == "\"2\"")
            #expect(try Self.document(readBack) == Self.threeZones)
            #expect(try Self.document(try await api.get("/v1/zones/versions/1")) == TestTrip.zones)

            let unknown = try await api.get("/v1/zones/versions/99")
            #expect(unknown.status == .notFound && unknown.headers[.contentType] == "application/problem+json")
            let notANumber = try ManagementConventionsTests.problem(try await api.get("/v1/zones/versions/latest"))
            #expect(notANumber.status == .badRequest && notANumber.names == ["version"])
            for (query, name) in [("limit=0", "limit"), ("limit=1001", "limit"), ("cursor=x", "cursor"), ("page=2", "page")] {
                let refused = try ManagementConventionsTests.problem(try await api.get("/v1/zones/versions?\(query)"))
                #expect(refused.status == .badRequest && refused.names == [name], "\(query): \(refused)")
            }
        }
    }

    /// A replacement keeps who made it (the management key's id) and the message it gave;
    /// a message too long, or with a control character, is refused naming it and changes nothing.
    @Test func versionsShowTheirAuthorAndMessage() async throws {
        try await withZonesAPI { harness, database, api in
            let keyId = try #require(
                try await ProjectStore(database: database, logger: harness.logger).match(forKey: harness.managementKey, kind: .management)
            ).keyId
            #expect(keyId.hasPrefix("key_"))
            let message = "Café opens its terrace, so its fence grows"
            let query = "?message=" + message.addingPercentEncoding(withAllowedCharacters: .urlQueryAllowed)!
            let replaced = try await api.put(Self.threeZones, query: query)
            #expect(replaced.status == .ok, "\(String(buffer: replaced.body))")
            let restored = try await api.restore("1")
            #expect(restored.status == .ok, "\(String(buffer: restored.body))")

            for refused in [String(repeating: "x", count: 201), "two\nlines"] {
                let query = "?message=" + refused.addingPercentEncoding(withAllowedCharacters: .urlQueryAllowed)!
                let problem = try ManagementConventionsTests.problem(try await api.put(TestTrip.zones, query: query))
                #expect(problem.status == .badRequest && problem.names == ["message"], "\(problem)")
            }
            #expect(try await api.put(Self.threeZones, query: "?message=" + String(repeating: "x", count: 200)).status == .ok)

            let versions = try Self.object(try await api.get("/v1/zones/versions"))["versions"] as? [[String: Any]] ?? []
            #expect(versions.compactMap { $0["version"] as? Int } == [4, 3, 2, 1])
            #expect(versions.map { $0["author"] as? String } == [keyId, keyId, keyId, nil])
            #expect(versions.map { $0["message"] as? String } == [String(repeating: "x", count: 200), nil, message, nil])
        }
    }

    @Test func aStaleIfMatchIs412AndChangesNothing() async throws {
        try await withZonesAPI { _, _, api in
            let matching = try await api.put(Self.threeZones, ifMatch: "\"1\"")
            #expect(matching.status == .ok, "\(String(buffer: matching.body))")

            let stale = try await api.put(TestTrip.zones, ifMatch: "\"1\"")
            #expect(stale.status == .preconditionFailed)
            #expect(stale.headers[.contentType] == "application/problem+json")
            #expect(stale.headers[.eTag] == "\"2\"")
            let problem = try Self.object(stale)
            #expect(problem["type"] as? String == "urn:checkin:problem:version-mismatch")
            #expect((problem["detail"] as? String)?.contains("version 2") == true, "\(problem)")
            #expect(try ManagementConventionsTests.problem(stale).names == ["If-Match"])
            let unchanged = try await api.current()
            #expect(unchanged.document == Self.threeZones && unchanged.entityTag == "\"2\"")
            let listed = try Self.object(try await api.get("/v1/zones/versions"))["versions"] as? [[String: Any]]
            #expect(listed?.compactMap { $0["version"] as? Int } == [2, 1])

            // A bare number matches as a quoted one does; * matches any version.
            #expect(try await api.put(TestTrip.zones, ifMatch: "2").status == .ok)
            #expect(try await api.put(Self.threeZones, ifMatch: "*").status == .ok)
            #expect(try await api.current().entityTag == "\"4\"")
            let malformed = try ManagementConventionsTests.problem(try await api.put(TestTrip.zones, ifMatch: "W/\"4\"x"))
            #expect(malformed.status == .badRequest && malformed.names == ["If-Match"])
            // A sign is not a digit: "+04" names no version the document allows.
            let signed = try ManagementConventionsTests.problem(try await api.put(TestTrip.zones, ifMatch: "+04"))
            #expect(signed.status == .badRequest && signed.names == ["If-Match"])
        }
    }

    /// Two replacements naming the same version at once: one is applied, the other is told the
    /// version moved on, never both applied one over the other.
    @Test func ofTwoReplacementsNamingTheSameVersionOnlyOneIsApplied() async throws {
        try await withZonesAPI { _, _, api in
            let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                for document in [Self.threeZones, ZonesDocument(zones: [Self.zone("zone-new", metresEast: 0)])] {
                    group.addTask { try await api.put(document, ifMatch: "\"1\"").status }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses.map(\.code).sorted() == [200, 412])
            let listed = try Self.object(try await api.get("/v1/zones/versions"))["versions"] as? [[String: Any]]
            #expect(listed?.compactMap { $0["version"] as? Int } == [2, 1])
        }
    }

    /// A project whose zones were never replaced has version 0: `ETag: "0"` with no zones, and
    /// `If-Match: "0"` guards its first replacement as any other version does.
    @Test func zonesNeverReplacedAreVersionZero() async throws {
        try await withZonesAPI { harness, database, api in
            let bare = ZonesAPI(client: api.client, managementKey: "ck_management_bare_\(harness.suffix)")
            let projects = ProjectStore(database: database, logger: harness.logger)
            try await projects.createProject(id: "bare-\(harness.suffix)", name: "Bare")
            try await projects.addKey(bare.managementKey, projectId: "bare-\(harness.suffix)", kind: .management)

            let never = try await bare.current()
            #expect(never.document == ZonesDocument(zones: []) && never.entityTag == "\"0\"")
            let stale = try await bare.put(Self.threeZones, ifMatch: "\"1\"")
            #expect(stale.status == .preconditionFailed && stale.headers[.eTag] == "\"0\"")
            let first = try await bare.put(Self.threeZones, ifMatch: "\"0\"")
            #expect(first.status == .ok, "\(String(buffer: first.body))")
            #expect(first.headers[.eTag] == "\"1\"")
        }
    }

    /// A dry run validates and lints as a replacement does, answers what would change, and
    /// changes nothing; the replace interval, which spaces out replacements, does not hold it back.
    @Test func aDryRunReportsTheChangesAndWarningsAndChangesNothing() async throws {
        try await withZonesAPI(quota: ZoneQuota(minimumReplaceInterval: .seconds(3600))) { harness, database, api in
            // Stored past the API, whose replace interval would refuse it this soon after the harness's.
            try await ZoneStore(database: database, logger: harness.logger).replaceZones(
                projectId: harness.projectId, with: Self.threeZones)
            let proposed = ZonesDocument(zones: [
                Self.zone("zone-kept", metresEast: 10_000), Self.zone("zone-cafe", metresEast: 0, name: "Cafe, renamed"),
                Self.zone("zone-bakery", metresEast: 150),
            ])
            let answer = try await api.put(proposed, query: "?dryRun=true")
            #expect(answer.status == .ok, "\(String(buffer: answer.body))")
            #expect(answer.headers[.eTag] == "\"2\"")
            let report = try Self.object(answer)
            #expect(report["dryRun"] as? Bool == true)
            #expect(report["added"] as? [String] == ["zone-bakery"])
            #expect(report["removed"] as? [String] == ["zone-old"])
            #expect(report["changed"] as? [String] == ["zone-cafe"])
            #expect(report["changedMembers"] as? [String: [String]] == ["zone-cafe": ["name"]])
            #expect(report["unchanged"] as? Int == 1)
            #expect(report["warningCount"] as? Int == 1)
            let warning = try #require((report["warnings"] as? [[String: Any]])?.first)
            #expect(Set([warning["zoneId"] as? String, warning["otherZoneId"] as? String]) == ["zone-cafe", "zone-bakery"])

            let after = try await api.current()
            #expect(after.document == Self.threeZones && after.entityTag == "\"2\"")
            let listed = try Self.object(try await api.get("/v1/zones/versions"))["versions"] as? [[String: Any]]
            #expect(listed?.count == 2)
            // The replacement itself is held to the interval.
            #expect(try await api.put(proposed).status == .tooManyRequests)
            #expect(try await api.put(proposed, query: "?dryRun=false").status == .tooManyRequests)

            let stale = try await api.put(proposed, query: "?dryRun=true", ifMatch: "1")
            #expect(stale.status == .preconditionFailed)
            let notABoolean = try ManagementConventionsTests.problem(try await api.put(proposed, query: "?dryRun=yes"))
            #expect(notABoolean.status == .badRequest && notABoolean.names == ["dryRun"])
            let misspelt = try ManagementConventionsTests.problem(try await api.put(proposed, query: "?dryrun=true"))
            #expect(misspelt.status == .badRequest && misspelt.names == ["dryrun"])
        }
    }

    @Test func aDryRunOfAnInvalidDocumentIsTheSame400() async throws {
        try await withZonesAPI { _, _, api in
            let invalid = """
                {"zones": [{"id": "cafe", "minimumRetrigerTime": 600,
                            "fences": [{"id": "door", "geometry": {"type": "Point", "coordinates": [13.4, 52.5]}, "radius": 30}]},
                           {"id": "empty", "fences": []}]}
                """
            let replaced = try await api.execute("/v1/zones", method: .put, body: invalid)
            let dryRun = try await api.execute("/v1/zones?dryRun=true", method: .put, body: invalid)
            let problem = try ManagementConventionsTests.problem(dryRun)
            #expect(problem.status == .badRequest && problem.type == "application/problem+json")
            #expect(problem.names == ["zones[cafe].minimumRetrigerTime", "zones[empty]"], "\(problem.names)")
            #expect(String(buffer: dryRun.body) == String(buffer: replaced.body))
            let mistyped = #"{"zones": [{"id": "cafe", "minimumRetriggerTime": "600"}]}"#
            let typeProblem = try ManagementConventionsTests.problem(
                try await api.execute("/v1/zones?dryRun=true", method: .put, body: mistyped))
            #expect(typeProblem.status == .badRequest && typeProblem.names == ["zones[0].minimumRetriggerTime"])
            #expect(try await api.current().document == TestTrip.zones)
        }
    }

    @Test func restoringAVersionMakesANewVersionWithItsDocument() async throws {
        try await withZonesAPI { _, _, api in
            #expect(try await api.put(Self.threeZones).status == .ok)
            let restored = try await api.restore("1")
            #expect(restored.status == .ok, "\(String(buffer: restored.body))")
            #expect(restored.headers[.eTag] == "\"3\"")
            let answer = try Self.object(restored)
            #expect(answer["version"] as? Int == 3 && answer["zones"] as? Int == 1 && answer["warningCount"] as? Int == 0)
            let current = try await api.current()
            #expect(current.document == TestTrip.zones && current.entityTag == "\"3\"")
            #expect(try Self.document(try await api.get("/v1/zones/versions/3")) == TestTrip.zones)
            // History is kept: version 2 is still there, to be restored in its turn.
            #expect(try Self.document(try await api.get("/v1/zones/versions/2")) == Self.threeZones)

            let unknown = try await api.restore("99")
            #expect(unknown.status == .notFound && unknown.headers[.contentType] == "application/problem+json")
            #expect(try ManagementConventionsTests.problem(try await api.restore("two")).names == ["version"])
            let stale = try await api.restore("2", ifMatch: "\"2\"")
            #expect(stale.status == .preconditionFailed)
            #expect(try await api.current().entityTag == "\"3\"")
            #expect(try await api.restore("2", ifMatch: "\"3\"").status == .ok)
            #expect(try await api.current().document == Self.threeZones)
        }
    }

    /// A restore resent with its `Idempotency-Key` gets the first answer again with its `ETag`:
    /// the version it made, which the client's next change names in `If-Match`.
    @Test func aResentRestoreGetsTheVersionItMadeAgain() async throws {
        try await withZonesAPI { _, _, api in
            #expect(try await api.put(Self.threeZones).status == .ok)
            let first = try await api.restore("1", idempotencyKey: "restore-once")
            #expect(first.status == .ok && first.headers[.eTag] == "\"3\"", "\(String(buffer: first.body))")
            #expect(try await api.put(Self.threeZones, ifMatch: "\"3\"").status == .ok)
            let resent = try await api.restore("1", idempotencyKey: "restore-once")
            #expect(resent.headers[HTTPField.Name("Idempotent-Replayed")!] == "true")
            #expect(resent.status == .ok && resent.headers[.eTag] == "\"3\"")
            #expect(String(buffer: resent.body) == String(buffer: first.body))
            // Nothing was restored again: the zones are still at the version the PUT made.
            #expect(try await api.current().entityTag == "\"4\"")
        }
    }

    /// The version routes answer a method they do not take with 405 and `Allow`, as every route does.
    @Test func versionRoutesAnswerAWrongMethodWithAllow() async throws {
        try await withZonesAPI { _, _, api in
            for (uri, method, allow) in [
                ("/v1/zones/versions", HTTPRequest.Method.post, "GET, HEAD"), ("/v1/zones/versions/1", .put, "GET, HEAD"),
                ("/v1/zones/versions/1/restore", .get, "POST"),
            ] {
                let answer = try await api.execute(uri, method: method)
                #expect(answer.status == .methodNotAllowed && answer.headers[.allow] == allow, "\(method) \(uri)")
            }
        }
    }
}
