import Foundation
import Geofence
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Ingest
import Persistence
import Shared
import Testing

/// Conventions every management route keeps: a misspelt query parameter or an out-of-range
/// limit is a 400 naming it, not an answer with everything; a request carrying two different
/// API keys is a 400, not the data of whichever project won.
@Suite struct ManagementConventionsTests {
    func withIngest(_ body: @Sendable (PipelineHarness, any TestClientProtocol) async throws -> Void) async throws {
        try await withIngest { harness, _, client in try await body(harness, client) }
    }

    func withIngest(_ body: @Sendable (PipelineHarness, Database, any TestClientProtocol) async throws -> Void) async throws {
        let harness = PipelineHarness()
        try await harness.prepare()
        try await withIngestApplication(harness, configuration: IngestConfiguration(port: 0, topics: harness.topics)) { database, client in
            try await body(harness, database, client)
        }
    }

    /// The names in a problem's `invalid-params`, and its status and content type.
    static func problem(_ response: TestResponse) throws -> (status: HTTPResponse.Status, type: String?, names: [String]) {
        let object = try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any]
        let parameters = object?["invalid-params"] as? [[String: Any]] ?? []
        return (response.status, response.headers[.contentType], parameters.compactMap { $0["name"] as? String })
    }

    @Test func unknownQueryParametersAndLimitsOutOfRangeAreRefusedNamingEach() async throws {
        try await withIngest { harness, client in
            let key: HTTPFields = [.authorization: "Bearer \(harness.managementKey)"]
            func get(_ uri: String) async throws -> TestResponse { try await client.execute(uri: uri, method: .get, headers: key) }

            let misspelt = try Self.problem(try await get("/v1/deliveries?device=phone-1&statu=failed"))
            #expect(misspelt.status == .badRequest)
            #expect(misspelt.type == "application/problem+json")
            #expect(misspelt.names == ["device", "statu"])
            #expect(try Self.problem(try await get("/v1/deliveries?limit=5000")).names == ["limit"])
            #expect(try Self.problem(try await get("/v1/deliveries?limit=0")).names == ["limit"])
            for uri in ["/v1/zones?version=2", "/v1/webhooks?enabled=true", "/v1/devices/d1?x=1", "/v1/devices/d1/decisions?from=1"] {
                let answer = try Self.problem(try await get(uri))
                #expect(answer.status == .badRequest && answer.names.count == 1, "\(uri): \(answer)")
            }
            #expect(try await get("/v1/deliveries?status=failed&limit=1000").status == .ok)
            #expect(try await get("/v1/zones").status == .ok)
        }
    }

    /// A route that changes something refuses what it does not read before it acts: a query
    /// parameter (`?dryRun=true` on an erasure erases nothing), a parameter given twice, a
    /// member of the wrong type (named), a body that is not UTF-8; and a beacon's problem is
    /// named as a beacon's.
    @Test func changingRoutesRefuseWhatTheyDoNotReadBeforeActing() async throws {
        try await withIngest { harness, database, client in
            let key: HTTPFields = [.authorization: "Bearer \(harness.managementKey)", .contentType: "application/json"]
            let logger = harness.logger
            try await database.withTransaction { connection in
                try await DeviceStateStore(logger: logger).save(
                    [
                        StoredDeviceState(
                            key: DeviceKey(projectId: harness.projectId, deviceId: "kept"), state: DeviceState().binaryEncoded(),
                            lastFixAt: Date(), staleAt: nil)
                    ], on: connection)
            }
            let erasure = try Self.problem(try await client.execute(uri: "/v1/devices/kept?dryRun=true", method: .delete, headers: key))
            #expect(erasure.status == .badRequest && erasure.names == ["dryRun"])
            #expect(try await client.execute(uri: "/v1/devices/kept", method: .get, headers: key).status == .ok)
            for (uri, body) in [("/v1/keys?x=1", #"{"kind": "device"}"#), ("/v1/webhooks?x=1", #"{"url": "https://example.com/h"}"#)] {
                let refused = try Self.problem(
                    try await client.execute(uri: uri, method: .post, headers: key, body: ByteBuffer(string: body)))
                #expect(refused.status == .badRequest && refused.names == ["x"], "\(uri)")
            }
            let twice = try Self.problem(try await client.execute(uri: "/v1/deliveries?limit=1&limit=2", method: .get, headers: key))
            #expect(twice.status == .badRequest && twice.names == ["limit"])

            let wrongType = try Self.problem(
                try await client.execute(uri: "/v1/keys", method: .post, headers: key, body: ByteBuffer(string: #"{"kind": 5}"#)))
            #expect(wrongType.status == .badRequest && wrongType.names == ["kind"])
            var notText = ByteBuffer(string: #"{"kind": "device", "x": ""#)
            notText.writeBytes([0xFF])
            notText.writeString(#""}"#)
            let undecodable = try await client.execute(uri: "/v1/keys", method: .post, headers: key, body: notText)
            #expect(undecodable.status == .badRequest, "\(String(buffer: undecodable.body))")
            #expect(String(buffer: undecodable.body).contains("not valid UTF-8"))
            var zonesNotText = ByteBuffer(string: #"{"zones": [{"id": "cafe", "name": ""#)
            zonesNotText.writeBytes([0xFF])
            zonesNotText.writeString(
                #"", "fences": [{"id": "f", "geometry": {"type": "Point", "coordinates": [4.9, 52.37]}, "radius": 50}]}]}"#)
            let zonesUndecodable = try await client.execute(uri: "/v1/zones", method: .put, headers: key, body: zonesNotText)
            #expect(zonesUndecodable.status == .badRequest, "\(String(buffer: zonesUndecodable.body))")
            #expect(String(buffer: zonesUndecodable.body).contains("not valid UTF-8"))

            let beacon = #"{"zones": [{"id": "cafe", "beacons": [{"id": "b1", "uuid": "not-a-uuid"}]}]}"#
            let zones = try Self.problem(
                try await client.execute(uri: "/v1/zones", method: .put, headers: key, body: ByteBuffer(string: beacon)))
            #expect(zones.status == .badRequest && zones.names == ["zones[cafe].beacons[b1]"], "\(zones.names)")
        }
    }

    /// A zones document with a member no field reads is refused, each such member named
    /// beside the validator's problems, and nothing is changed.
    @Test func zonesWithUnknownMembersAreRefusedNamingEach() async throws {
        try await withIngest { harness, client in
            let headers: HTTPFields = [.authorization: "Bearer \(harness.managementKey)", .contentType: "application/json"]
            let before = try await client.execute(uri: "/v1/zones", method: .get, headers: headers)
            let document = """
                {"zones": [{"id": "cafe", "minimumRetrigerTime": 600, "conditions": {"maxSpeeed": 3},
                            "fences": [{"id": "door", "geometry": {"type": "Point", "coordinates": [13.4, 52.5]}, "radius": 30}]},
                           {"id": "empty", "fences": []}]}
                """
            let refused = try await client.execute(
                uri: "/v1/zones", method: .put, headers: headers, body: ByteBuffer(string: document))
            let problem = try Self.problem(refused)
            #expect(problem.status == .badRequest)
            #expect(
                problem.names.starts(with: ["zones[cafe].conditions.maxSpeeed", "zones[cafe].minimumRetrigerTime"]), "\(problem.names)")
            #expect(problem.names.contains("zones[empty]"), "\(problem.names)")
            // A value of the wrong type names its member too.
            let mistyped = try await client.execute(
                uri: "/v1/zones", method: .put, headers: headers,
                body: ByteBuffer(string: #"{"zones": [{"id": "cafe", "minimumRetriggerTime": "600"}]}"#))
            let typeProblem = try Self.problem(mistyped)
            #expect(typeProblem.status == .badRequest && typeProblem.names == ["zones[0].minimumRetriggerTime"])
            #expect(String(buffer: mistyped.body).contains("must be a number"), "\(String(buffer: mistyped.body))")
            // Every zone and fence at fault, not the first alone.
            let fence = #"{"id": "door", "geometry": {"type": "Point", "coordinates": [13.4, 52.5]}, "radius": "30"}"#
            let mistypedTwice = try await client.execute(
                uri: "/v1/zones", method: .put, headers: headers,
                body: ByteBuffer(
                    string: #"{"zones": [{"id": "cafe", "enabled": "yes"}, {"id": "park", "fences": [\#(fence)]}]}"#))
            let both = try Self.problem(mistypedTwice)
            #expect(
                both.status == .badRequest && both.names == ["zones[0].enabled", "zones[1].fences[0].radius"], "\(both.names)")
            let after = try await client.execute(uri: "/v1/zones", method: .get, headers: headers)
            #expect(String(buffer: after.body) == String(buffer: before.body))
        }
    }

    /// A path the API has, asked with a method it does not take, is a 405 naming the methods
    /// it takes; a path it does not have, or a resource that does not exist, stays a 404.
    @Test func aWrongMethodIsA405WithAllow() async throws {
        try await withIngest { harness, client in
            let key: HTTPFields = [.authorization: "Bearer \(harness.managementKey)"]
            let zones = try await client.execute(uri: "/v1/zones", method: .delete, headers: key)
            #expect(zones.status == .methodNotAllowed)
            #expect(zones.headers[.allow] == "GET, HEAD, PUT")
            #expect(zones.headers[.contentType] == "application/problem+json")
            let body = try JSONSerialization.jsonObject(with: Data(buffer: zones.body)) as? [String: Any]
            #expect(body?["type"] as? String == "urn:checkin:problem:method-not-allowed")
            let webhook = try await client.execute(uri: "/v1/webhooks/we_abc", method: .put, headers: key)
            #expect(webhook.status == .methodNotAllowed)
            #expect(webhook.headers[.allow]?.contains("DELETE") == true)
            #expect(try await client.execute(uri: "/v1/fixes", method: .get, headers: key).headers[.allow] == "POST")
            // A literal path is its own route, not the value of a parameter beside it, as the router reads it.
            let replay = try await client.execute(uri: "/v1/deliveries/replay", method: .get, headers: key)
            #expect(replay.status == .methodNotAllowed)
            #expect(replay.headers[.allow] == "POST")
            #expect(try await client.execute(uri: "/v1/nosuch", method: .get, headers: key).status == .notFound)
            #expect(try await client.execute(uri: "/v1/webhooks/we_doesnotexist", method: .delete, headers: key).status == .notFound)
        }
    }

    /// Clients percent-encode identifiers in a path. A device named with a space, a slash and
    /// a letter beyond ASCII is found by its encoded path; an identifier within the length
    /// limit whose encoding is longer than it, or text that cannot be an identifier, names
    /// nothing (404); broken encoding is a 400 naming the parameter.
    @Test func identifiersInAPathArePercentDecoded() async throws {
        try await withIngest { harness, database, client in
            let key: HTTPFields = [.authorization: "Bearer \(harness.managementKey)"]
            let deviceId = "bus 7/café"
            let logger = harness.logger
            try await database.withTransaction { connection in
                try await DeviceStateStore(logger: logger).save(
                    [
                        StoredDeviceState(
                            key: DeviceKey(projectId: harness.projectId, deviceId: deviceId),
                            state: DeviceState().binaryEncoded(), lastFixAt: Date(), staleAt: nil)
                    ], on: connection)
            }
            let view = try await client.execute(uri: "/v1/devices/bus%207%2Fcaf%C3%A9", method: .get, headers: key)
            #expect(view.status == .ok)
            #expect(try JSONDecoder().decode(DeviceView.self, from: Data(buffer: view.body)).deviceId == deviceId)

            // Forty scalars of four bytes: 40 characters, within the 128 allowed, 480 once encoded.
            let long = String(repeating: "\u{1D11E}", count: 40).addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
            #expect(long.count > 128)
            let disable = try await client.execute(uri: "/v1/webhooks/\(long)/disable", method: .post, headers: key)
            #expect(disable.status == .notFound)
            // Control characters cannot be in an identifier: nothing is found, and Postgres is not handed a NUL.
            for uri in ["/v1/webhooks/we%C2%90", "/v1/devices/d%00", "/v1/keys/k%00/rotate"] {
                let method: HTTPRequest.Method = uri.hasSuffix("rotate") ? .post : .get
                let missing = try await client.execute(uri: uri, method: method, headers: key)
                #expect(missing.status == .notFound, "\(uri): \(String(buffer: missing.body))")
            }
            let decisions = try await client.execute(uri: "/v1/devices/d%00/decisions", method: .get, headers: key)
            #expect(decisions.status == .ok, "\(String(buffer: decisions.body))")

            for broken in ["%ZZ", "%C3%28"] {
                let refused = try await client.execute(uri: "/v1/devices/\(broken)", method: .get, headers: key)
                let problem = try Self.problem(refused)
                #expect(problem.status == .badRequest)
                #expect(problem.type == "application/problem+json")
                #expect(problem.names == ["deviceId"])
            }
        }
    }

    /// Replaying the failed deliveries of one endpoint names it by a valid identifier: an
    /// empty or over-long `endpointId` is a 400 naming it, an endpoint the project does not
    /// have a 404, not a replay of nothing.
    @Test func replayingFailedDeliveriesRefusesABadEndpointId() async throws {
        try await withIngest { harness, client in
            let headers: HTTPFields = [.authorization: "Bearer \(harness.managementKey)", .contentType: "application/json"]
            for endpointId in ["", String(repeating: "e", count: 129)] {
                let refused = try await client.execute(
                    uri: "/v1/deliveries/replay", method: .post, headers: headers,
                    body: ByteBuffer(string: #"{"status": "failed", "endpointId": "\#(endpointId)"}"#))
                let problem = try Self.problem(refused)
                #expect(problem.status == .badRequest, "\(String(buffer: refused.body))")
                #expect(problem.names == ["endpointId"])
            }
            let unknown = try await client.execute(
                uri: "/v1/deliveries/replay", method: .post, headers: headers,
                body: ByteBuffer(string: #"{"status": "failed", "endpointId": "we_none"}"#))
            #expect(unknown.status == .notFound, "\(String(buffer: unknown.body))")
            let everyEndpoint = try await client.execute(
                uri: "/v1/deliveries/replay", method: .post, headers: headers, body: ByteBuffer(string: #"{"status": "failed"}"#))
            #expect(everyEndpoint.status == .accepted)
            // Nor does an empty filter of the event log answer every event.
            for filter in ["deviceId=", "zoneId="] {
                let refused = try Self.problem(try await client.execute(uri: "/v1/events?\(filter)", method: .get, headers: headers))
                #expect(refused.status == .badRequest && refused.names == [String(filter.dropLast())], "\(filter)")
            }
        }
    }

    /// Deliveries are listed a page at a time, newest first, each page saying whether more
    /// follow and where; `retrying` lists the pending ones attempted at least once.
    @Test func deliveriesArePagedAndRetryingIsAStatusToListBy() async throws {
        try await withIngest { harness, database, client in
            try await queueToADisabledEndpoint(5, named: "e-\(harness.suffix)", harness: harness, database: database)
            try await database.client.query(
                "UPDATE deliveries SET attempts = 1 WHERE event_id = \("e-\(harness.suffix)-2")", logger: harness.logger)
            let key: HTTPFields = [.authorization: "Bearer \(harness.managementKey)"]
            func page(_ uri: String) async throws -> [String: Any] {
                let answer = try await client.execute(uri: uri, method: .get, headers: key)
                #expect(answer.status == .ok, "\(uri): \(String(buffer: answer.body))")
                return try #require(try JSONSerialization.jsonObject(with: Data(buffer: answer.body)) as? [String: Any])
            }
            var ids: [Int64] = []
            var pages: [Bool] = []
            var cursor: String?
            repeat {
                let answer = try await page("/v1/deliveries?limit=2" + (cursor.map { "&cursor=\($0)" } ?? ""))
                ids += (answer["deliveries"] as? [[String: Any]] ?? []).compactMap {
                    ($0["id"] as? String).flatMap { DeliveryIdentifier.number($0) }
                }
                pages.append(answer["hasMore"] as? Bool ?? false)
                cursor = answer["nextCursor"] as? String
            } while cursor != nil && pages.count < 10
            #expect(ids.count == 5 && ids == ids.sorted(by: >) && Set(ids).count == 5, "\(ids)")
            #expect(pages == [true, true, false])
            let retrying = try await page("/v1/deliveries?status=retrying")
            #expect((retrying["deliveries"] as? [[String: Any]])?.compactMap { $0["eventId"] as? String } == ["e-\(harness.suffix)-2"])
            #expect((try await page("/v1/deliveries?status=pending")["deliveries"] as? [Any])?.count == 5)
            let unknown = try Self.problem(try await client.execute(uri: "/v1/deliveries?status=retried", method: .get, headers: key))
            #expect(unknown.status == .badRequest && unknown.names == ["status"])
        }
    }

    /// Replaying deliveries whose endpoint is disabled queues them and says that they wait
    /// for the endpoint, instead of a bare success after which nothing is sent.
    /// A delivery is named `dlv_` and its number everywhere the API shows or takes one.
    @Test func deliveriesAreNamedByAPrefixedId() async throws {
        try await withIngest { harness, database, client in
            _ = try await queueToADisabledEndpoint(1, named: "named-\(harness.suffix)", harness: harness, database: database)
            let key: HTTPFields = [.authorization: "Bearer \(harness.managementKey)", .contentType: "application/json"]
            let listed = try await client.execute(uri: "/v1/deliveries?limit=1", method: .get, headers: key)
            let page = try JSONSerialization.jsonObject(with: Data(buffer: listed.body)) as? [String: Any]
            let id = try #require((page?["deliveries"] as? [[String: Any]])?.first?["id"] as? String)
            #expect(id.hasPrefix("dlv_") && DeliveryIdentifier.number(id) != nil, "\(id)")
            #expect(try await client.execute(uri: "/v1/deliveries/\(id)", method: .get, headers: key).status == .ok)
            let number = try #require(DeliveryIdentifier.number(id))
            #expect(try await client.execute(uri: "/v1/deliveries/\(number)", method: .get, headers: key).status == .notFound)
            let refused = try await client.execute(
                uri: "/v1/deliveries/replay", method: .post, headers: key, body: ByteBuffer(string: #"{"ids": ["\#(id)", "\#(number)"]}"#))
            #expect(try Self.problem(refused).names == ["ids[1]"])
        }
    }

    @Test func replayingToADisabledEndpointSaysTheDeliveriesWait() async throws {
        try await withIngest { harness, database, client in
            let webhooks = WebhookStore(database: database, logger: harness.logger, sealer: harness.sealer)
            let endpoint = try await webhooks.addEndpoint(
                projectId: harness.projectId, url: "http://127.0.0.1:9/hooks", secrets: [WebhookSecret.generate()])
            let delivery = NewDelivery(
                endpointId: endpoint.id, projectId: harness.projectId, eventId: "e-\(harness.suffix)", eventType: "checkin",
                deviceId: "d", eventTime: Date(), sequence: 1, payload: "{}")
            #expect(try await webhooks.enqueue([delivery]) == 1)
            let number = try #require(
                try await webhooks.deliveries(projectId: harness.projectId, filter: nil, before: nil, limit: 10).deliveries.first?.id)
            let id = DeliveryIdentifier.text(number)
            _ = try await webhooks.disableEndpoint(id: endpoint.id, projectId: harness.projectId, reason: "test")
            let headers: HTTPFields = [.authorization: "Bearer \(harness.managementKey)", .contentType: "application/json"]
            /// Only a delivery that is done can be replayed: it failed (its retries ran out), again.
            func fail() async throws {
                try await database.client.query(
                    "UPDATE deliveries SET status = 'failed', next_attempt_at = 'infinity', lease_owner = NULL, leased_until = NULL WHERE id = \(number)",
                    logger: harness.logger)
            }

            // Pending still: it goes out without a replay, and a replay would race it.
            for (uri, body) in [("/v1/deliveries/\(id)/replay", ""), ("/v1/deliveries/replay", #"{"ids": ["\#(id)"]}"#)] {
                let answer = try await client.execute(uri: uri, method: .post, headers: headers, body: ByteBuffer(string: body))
                #expect(answer.status == .conflict, "\(uri): \(String(buffer: answer.body))")
                #expect(String(buffer: answer.body).contains("delivery-pending") && String(buffer: answer.body).contains(id))
            }
            for (uri, body) in [("/v1/deliveries/\(id)/replay", ""), ("/v1/deliveries/replay", #"{"ids": ["\#(id)"]}"#)] {
                try await fail()
                let answer = try await client.execute(uri: uri, method: .post, headers: headers, body: ByteBuffer(string: body))
                #expect(answer.status == .accepted)
                let object = try JSONSerialization.jsonObject(with: Data(buffer: answer.body)) as? [String: Any]
                #expect(object?["replayed"] as? Int == 1, "\(uri): \(String(buffer: answer.body))")
                #expect(object?["disabledEndpoints"] as? [String] == [endpoint.id], "\(uri): \(String(buffer: answer.body))")
            }
            _ = try await webhooks.enableEndpoint(id: endpoint.id, projectId: harness.projectId)
            try await fail()
            let enabled = try await client.execute(
                uri: "/v1/deliveries/\(id)/replay", method: .post, headers: headers, body: ByteBuffer())
            let object = try JSONSerialization.jsonObject(with: Data(buffer: enabled.body)) as? [String: Any]
            #expect(object?["disabledEndpoints"] as? [String] == [])

            // Each replay is kept: the delivery's attempt log shows where each round began.
            let shown = try await client.execute(uri: "/v1/deliveries/\(id)", method: .get, headers: headers)
            let detail = try WireJSON.decoder().decode(DeliveryDetail.self, from: Data(buffer: shown.body))
            #expect(detail.replays.count == 3 && detail.replays == detail.replays.sorted(), "\(String(buffer: shown.body))")
            #expect(detail.endpointUrl == "http://127.0.0.1:9/hooks" && detail.payload == "{}")
        }
    }

    @Test func twoDifferentKeysInOneRequestAreRefused() async throws {
        try await withIngest { harness, client in
            guard let apiKey = HTTPField.Name("X-API-Key") else { throw TestFailure("X-API-Key is not a field name") }
            let both: HTTPFields = [.authorization: "Bearer \(harness.managementKey)", apiKey: harness.deviceKey]
            let refused = try Self.problem(try await client.execute(uri: "/v1/zones", method: .get, headers: both))
            #expect(refused.status == .badRequest)
            #expect(refused.names == ["Authorization", "X-API-Key"])
            // The same key twice is not ambiguous.
            let same: HTTPFields = [.authorization: "Bearer \(harness.managementKey)", apiKey: harness.managementKey]
            #expect(try await client.execute(uri: "/v1/zones", method: .get, headers: same).status == .ok)
            // Nor is it left to chance which of two Authorization headers counts.
            let twice = HTTPFields([
                HTTPField(name: .authorization, value: "Bearer \(harness.managementKey)"),
                HTTPField(name: .authorization, value: "Bearer \(harness.deviceKey)"),
            ])
            let refusedTwice = try Self.problem(try await client.execute(uri: "/v1/zones", method: .get, headers: twice))
            #expect(refusedTwice.status == .badRequest && refusedTwice.names == ["Authorization"])
        }
    }
}

/// `checkin deliveries list` of a project that does not exist says so and exits non-zero:
/// an empty list means no deliveries, never a misspelt project.
@Test func deliveriesListOfAnUnknownProjectFails() async throws {
    let harness = PipelineHarness()
    try await harness.prepare()
    let environment = ["CHECKIN_SECRET_KEY": harness.secretKey.base64]
    let unknown = try await CommandOutcome.run(["deliveries", "list", "--project", "nosuch-\(harness.suffix)"], environment: environment)
    #expect(unknown.exitCode != 0)
    #expect(unknown.standardError.contains("no project 'nosuch-\(harness.suffix)'"), "\(unknown.standardError)")
    let known = try await CommandOutcome.run(["deliveries", "list", "--project", harness.projectId], environment: environment)
    #expect(known.exitCode == 0, "\(known.standardError)")
}

/// `checkin projects create` of a project that exists is refused, naming what gives it
/// another key, instead of making a second key pair without a word.
@Test func creatingAProjectTwiceIsRefused() async throws {
    let harness = PipelineHarness()
    try await harness.prepare()
    let environment = ["CHECKIN_SECRET_KEY": harness.secretKey.base64]
    let project = "twice-\(harness.suffix)"
    let first = try await CommandOutcome.run(["projects", "create", project], environment: environment)
    #expect(first.exitCode == 0, "\(first.standardError)")
    #expect(first.standardOutput.contains("management key: ck_management_"))
    let second = try await CommandOutcome.run(["projects", "create", project], environment: environment)
    #expect(second.exitCode != 0)
    #expect(second.standardError.contains("project '\(project)' exists"), "\(second.standardError)")
    #expect(!second.standardOutput.contains("ck_"))
}

/// `checkin deliveries list` prints a table with a header, each delivery's endpoint and
/// times, and the cursor of the next page when there is one.
@Test func deliveriesListIsATableWithEndpointsTimesAndACursor() async throws {
    let harness = PipelineHarness()
    try await harness.prepare()
    let environment = ["CHECKIN_SECRET_KEY": harness.secretKey.base64]
    let endpointId = try await withMigratedDatabase(url: TestEnvironment.databaseURL, logger: harness.logger) { database in
        try await queueToADisabledEndpoint(2, named: "listed-\(harness.suffix)", harness: harness, database: database)
    }
    let listed = try await CommandOutcome.run(
        ["deliveries", "list", "--project", harness.projectId, "--limit", "1"], environment: environment)
    #expect(listed.exitCode == 0, "\(listed.standardError)")
    let lines = listed.standardOutput.split(separator: "\n").map(String.init)
    #expect(
        lines.first?.contains("ID") == true && lines.first?.contains("ENDPOINT") == true && lines.first?.contains("QUEUED") == true,
        "\(lines)")
    #expect(lines.count == 3, "\(lines)")
    #expect(
        lines.dropFirst().first?.contains(endpointId) == true && lines.dropFirst().first?.contains("listed-\(harness.suffix)-2") == true,
        "\(lines)")
    let cursor = try #require(lines.last.flatMap { $0.split(separator: " ").last }.map { String($0.dropLast()) })
    let next = try await CommandOutcome.run(
        ["deliveries", "list", "--project", harness.projectId, "--limit", "1", "--cursor", cursor], environment: environment)
    #expect(
        next.standardOutput.contains("listed-\(harness.suffix)-1") && !next.standardOutput.contains("listed-\(harness.suffix)-2"),
        "\(next.standardOutput)")
}

/// Queues `count` check-in deliveries, of devices `<name>-1`… (their events likewise), to a
/// new endpoint of the harness's project, disabled so that the notifiers of tests running
/// beside this one (same database) leave them be; returns the endpoint's id.
@discardableResult
func queueToADisabledEndpoint(_ count: Int, named name: String, harness: PipelineHarness, database: Database) async throws -> String {
    let webhooks = WebhookStore(database: database, logger: harness.logger, sealer: harness.sealer)
    let endpoint = try await webhooks.addEndpoint(
        projectId: harness.projectId, url: "http://127.0.0.1:9/\(name)", secrets: [WebhookSecret.generate()])
    _ = try await webhooks.disableEndpoint(id: endpoint.id, projectId: harness.projectId, reason: "test")
    let deliveries = (1...count).map { device in
        NewDelivery(
            endpointId: endpoint.id, projectId: harness.projectId, eventId: "\(name)-\(device)", eventType: "checkin",
            deviceId: "\(name)-\(device)", eventTime: Date(), sequence: 1, payload: "{}")
    }
    #expect(try await webhooks.enqueue(deliveries) == count)
    return endpoint.id
}
