import Foundation
import Shared
import Testing

/// Webhook endpoints over the management API and in the running pipeline: what may be
/// added, what the notifier connects to, secrets shown once and rotated, endpoint state.
@Suite(.serialized) struct WebhookEndpointAPITests {
    struct EndpointList: Decodable {
        var webhooks: [ListedEndpoint]
    }

    struct ListedEndpoint: Decodable {
        var id: String
        var url: String
        var enabled: Bool
        var disabledReason: String?
        var disabledAt: String?
        var previousSecretExpiresAt: String?
        var secret: String?
    }

    func body(_ object: [String: String]) throws -> Data { try JSONEncoder().encode(object) }

    @Test func nonPublicURLsAreRefusedWhenAddedAndWhenDelivering() async throws {
        var strict = PipelineHarness()
        strict.webhookURLPolicy = .strict
        strict.databaseURL = try await PipelineHarness.freshDatabaseURL()
        let harness = strict
        try await harness.run { ingestPort, received in
            let base = "http://127.0.0.1:\(ingestPort)/v1"
            let refused = [
                "http://127.0.0.1/hook", "https://127.0.0.1/hook", "https://localhost/hook", "https://[::1]/hook",
                "https://0.0.0.0/hook", "https://169.254.169.254/latest/meta-data/", "https://10.0.0.8/hook",
                "https://2130706433/hook", "https://[::ffff:127.0.0.1]/hook", "https://127.1/hook", "https://0x7f.1/hook",
                "https://100.64.0.1/hook", "https://192.168.1.1/hook",
            ]
            for url in refused {
                let answer = try await post(try body(["url": url]), to: "\(base)/webhooks", key: harness.managementKey)
                #expect(answer.status == 400, "\(url)")
                #expect(answer.contentType == "application/problem+json")
                #expect(answer.body.contains(#""name":"url""#), "\(url): \(answer.body)")
            }
            let shortSecret = "whsec_" + Data(repeating: 1, count: 16).base64EncodedString()
            let badSecret = try await post(
                try body(["url": "https://hooks.example.com/hook", "secret": shortSecret]), to: "\(base)/webhooks",
                key: harness.managementKey)
            #expect(badSecret.status == 400)
            #expect(badSecret.body.contains(#""name":"secret""#))

            let accepted = try await post(
                try body(["url": "https://hooks.example.com/hook"]), to: "\(base)/webhooks", key: harness.managementKey)
            #expect(accepted.status == 201)
            let created = try JSONDecoder().decode(ListedEndpoint.self, from: Data(accepted.body.utf8))
            try WebhookSecret.validateNew(try #require(created.secret))
            let removed = try await post(Data(), to: "\(base)/webhooks/\(created.id)", key: harness.managementKey, method: .DELETE)
            #expect(removed.status == 204)
            let again = try await post(Data(), to: "\(base)/webhooks/\(created.id)", key: harness.managementKey, method: .DELETE)
            #expect(again.status == 404 && again.contentType == "application/problem+json")

            // The harness's receiver (http://127.0.0.1, put straight into the store) is refused at connection time.
            let trip = TestTrip(projectId: harness.projectId)
            #expect(try await post(try trip.batch(0..<9), to: "\(base)/fixes", key: harness.deviceKey).status == 202)
            let deadline = ContinuousClock.now + .seconds(90)
            var lastErrors: [String] = []
            while ContinuousClock.now < deadline {
                let listed = try await post(Data(), to: "\(base)/deliveries", key: harness.managementKey, method: .GET)
                let page = try JSONSerialization.jsonObject(with: Data(listed.body.utf8)) as? [String: Any]
                let records = page?["deliveries"] as? [[String: Any]] ?? []
                lastErrors = records.compactMap { $0["lastError"] as? String }
                if !lastErrors.isEmpty { break }
                try await Task.sleep(for: .milliseconds(200))
            }
            #expect(!lastErrors.isEmpty)
            #expect(lastErrors.allSatisfy { $0.contains("not connecting") }, "\(lastErrors)")
            #expect(await received.payloads.isEmpty)
        }
    }

    @Test func endpointsAreListedDisabledEnabledAndTheirSecretRotated() async throws {
        let harness = PipelineHarness()
        try await harness.run { ingestPort, received in
            let base = "http://127.0.0.1:\(ingestPort)/v1"
            let key = harness.managementKey
            let listed = try await post(Data(), to: "\(base)/webhooks", key: key, method: .GET)
            #expect(!listed.body.contains("whsec_") && !listed.body.contains("sealed:"))
            let endpoint = try #require(try JSONDecoder().decode(EndpointList.self, from: Data(listed.body.utf8)).webhooks.first)
            #expect(endpoint.enabled && endpoint.previousSecretExpiresAt == nil)

            let rotated = try await post(Data(), to: "\(base)/webhooks/\(endpoint.id)/rotate-secret", key: key)
            #expect(rotated.status == 200)
            let rotation = try JSONDecoder().decode(ListedEndpoint.self, from: Data(rotated.body.utf8))
            let newSecret = try WebhookSecret.validateNew(try #require(rotation.secret))
            #expect(rotation.previousSecretExpiresAt != nil)
            let afterRotation = try await post(Data(), to: "\(base)/webhooks/\(endpoint.id)", key: key, method: .GET)
            #expect(!afterRotation.body.contains("whsec_") && afterRotation.body.contains("previousSecretExpiresAt"))

            // During the rotation every webhook carries two signatures: the receiver checks the old
            // secret, and the new one verifies the same requests.
            let trip = TestTrip(projectId: harness.projectId)
            #expect(try await post(try trip.batch(0..<9), to: "\(base)/fixes", key: harness.deviceKey).status == 202)
            try await received.wait(timeout: .seconds(90)) { trip.isComplete($0) }
            let signed = await received.signed
            #expect(!signed.isEmpty)
            for request in signed {
                #expect(request.signature.split(separator: " ").count == 2)
                try WebhookSignature.verify(
                    id: request.id, timestamp: request.timestamp, signatureHeader: request.signature, body: request.body,
                    secret: newSecret)
            }
            #expect(await received.rejected == 0)

            let disabled = try await post(
                try body(["reason": "partner maintenance"]), to: "\(base)/webhooks/\(endpoint.id)/disable", key: key)
            #expect(disabled.status == 200)
            let disabledView = try JSONDecoder().decode(ListedEndpoint.self, from: Data(disabled.body.utf8))
            #expect(!disabledView.enabled && disabledView.disabledReason == "partner maintenance" && disabledView.disabledAt != nil)
            let listedDisabled = try await post(Data(), to: "\(base)/webhooks", key: key, method: .GET)
            #expect(try JSONDecoder().decode(EndpointList.self, from: Data(listedDisabled.body.utf8)).webhooks.map(\.enabled) == [false])

            let enabled = try await post(Data(), to: "\(base)/webhooks/\(endpoint.id)/enable", key: key)
            let enabledView = try JSONDecoder().decode(ListedEndpoint.self, from: Data(enabled.body.utf8))
            #expect(enabledView.enabled && enabledView.disabledReason == nil)

            #expect(try await post(Data(), to: "\(base)/webhooks/we_none/disable", key: key).status == 404)
            // A reason Postgres cannot store (NUL), or of more code points than documented (1,024
            // combining accents are one character to Swift), is refused naming it.
            for reason in ["a\u{0}b", "e" + String(repeating: "\u{301}", count: 1024)] {
                let refused = try await post(try body(["reason": reason]), to: "\(base)/webhooks/\(endpoint.id)/disable", key: key)
                #expect(refused.status == 400 && refused.body.contains(#""name":"reason""#), "\(refused.status) \(refused.body)")
            }
            #expect(try await post(Data(), to: "\(base)/webhooks/we_none/rotate-secret", key: key).status == 404)
            let shortSecret = "whsec_" + Data(repeating: 1, count: 16).base64EncodedString()
            let refusedRotation = try await post(
                try body(["secret": shortSecret]), to: "\(base)/webhooks/\(endpoint.id)/rotate-secret", key: key)
            #expect(refusedRotation.status == 400 && refusedRotation.body.contains(#""name":"secret""#))
            #expect(try await post(Data(), to: "\(base)/webhooks/\(endpoint.id)/disable", key: harness.deviceKey).status == 401)
        }
    }

    /// A production service does not start without the key that seals the secrets, and says which variable.
    @Test func productionServicesRefuseToStartWithoutASecretKey() async throws {
        let logDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("checkin-key-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: logDirectory, withIntermediateDirectories: true)
        for (name, key, expected) in [
            ("notifier", "", "CHECKIN_SECRET_KEY is not set"), ("ingest", "c2hvcnQ=", "CHECKIN_SECRET_KEY="),
        ] {
            let service = ServiceProcess(
                name: name, arguments: [name],
                environment: [
                    "CHECKIN_SECRET_KEY": key, "CHECKIN_DATABASE_URL": TestEnvironment.databaseURL,
                    "CHECKIN_KAFKA_BROKERS": TestEnvironment.kafkaBrokers, "CHECKIN_HTTP_PORT": "0",
                ], logDirectory: logDirectory)
            try service.start()
            try await withProcessesStopped([service]) {
                let status = await service.exitStatus(within: .seconds(30))
                #expect(status != nil && status != 0, "\(name) kept running")
                #expect(service.log.contains(expected), "\(service.log)")
            }
        }
    }
}

/// The `checkin webhooks` commands, run as an operator runs them.
@Suite(.serialized) struct WebhooksCommandTests {
    func run(_ arguments: [String], environment: [String: String] = [:]) async throws -> (status: Int32?, output: String) {
        let logDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("checkin-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: logDirectory, withIntermediateDirectories: true)
        let command = ServiceProcess(
            name: "cli", arguments: arguments,
            environment: environment.merging(
                ["CHECKIN_DATABASE_URL": TestEnvironment.databaseURL, "CHECKIN_SECRET_KEY": PipelineHarness.sharedSecretKey.base64]
            ) { given, _ in given }, logDirectory: logDirectory)
        try command.start()
        return try await withProcessesStopped([command]) { (await command.exitStatus(within: .seconds(60)), command.log) }
    }

    @Test func refusesNonPublicURLsAndShortSecretsNamingTheOption() async throws {
        for url in ["https://169.254.169.254/", "https://2130706433/", "http://hooks.example.com/"] {
            let refused = try await run(["webhooks", "add", "--project", "p", "--url", url])
            #expect(refused.status != nil && refused.status != 0)
            #expect(refused.output.contains("--url \(url) is not allowed"), "\(refused.output)")
        }
        // A partner on this machine: refused with what to do about it, then accepted with --local.
        let local = try await run(["webhooks", "add", "--project", "p", "--url", "http://127.0.0.1:9000/hooks"])
        #expect(local.status != nil && local.status != 0)
        #expect(local.output.contains("(for a local set-up such as checkin dev, add --local)"), "\(local.output)")
        let harness = PipelineHarness()
        try await harness.prepare()
        let accepted = try await run(["webhooks", "add", "--project", harness.projectId, "--local", "--url", "http://127.0.0.1:9000/hooks"])
        #expect(accepted.status == 0, "\(accepted.output)")
        #expect(accepted.output.contains("url:      http://127.0.0.1:9000/hooks"))
        let shortSecret = "whsec_" + Data(repeating: 1, count: 16).base64EncodedString()
        let badSecret = try await run(["webhooks", "add", "--project", "p", "--url", "https://hooks.example.com/", "--secret", shortSecret])
        #expect(badSecret.output.contains("--secret must be whsec_ followed by the base64 of 24 to 64 random bytes"))
    }

    @Test func addsListsDisablesEnablesAndRotates() async throws {
        let harness = PipelineHarness()
        try await harness.prepare()
        let project = harness.projectId
        let added = try await run(["webhooks", "add", "--project", project, "--url", "https://hooks.example.com/in"])
        #expect(added.status == 0, "\(added.output)")
        let id = try #require(added.output.split(separator: "\n").first { $0.hasPrefix("endpoint: ") }?.dropFirst(10))
        #expect(added.output.contains("secret:   whsec_"))

        let disabled = try await run(["webhooks", "disable", "--project", project, "--reason", "partner asked", String(id)])
        #expect(disabled.output.contains("disabled") && disabled.output.contains("partner asked"), "\(disabled.output)")
        let listed = try await run(["webhooks", "list", "--project", project])
        #expect(listed.output.contains("\(id)  disabled  https://hooks.example.com/in"), "\(listed.output)")
        #expect(!listed.output.contains("whsec_"))
        let enabled = try await run(["webhooks", "enable", "--project", project, String(id)])
        #expect(enabled.output.contains("\(id)  enabled "), "\(enabled.output)")

        let rotated = try await run(["webhooks", "rotate-secret", "--project", project, String(id)])
        #expect(rotated.output.contains("secret:   whsec_") && rotated.output.contains("previous secret signs too until"))
        let missing = try await run(["webhooks", "enable", "--project", project, "we_none"])
        #expect(missing.status != 0 && missing.output.contains("no endpoint we_none in project \(project)"))
    }
}
