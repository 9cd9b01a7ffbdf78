import Foundation
import Hummingbird
import HummingbirdTesting
import Ingest
import Persistence
import Shared
import Testing

/// The management commands against a remote deployment: with `CHECKIN_API_URL` they go
/// through the HTTP API (here an ingest on 127.0.0.1) and print what they print on the
/// database directly; what the API refuses is printed as its problem; an API that does not
/// answer is named at once; the commands the API does not offer say they are database-direct.
@Suite struct RemoteCommandTests {
    static let operatorKey = "operator-key-of-the-remote-command-tests-0123456789"

    /// Runs `body` with the URL of an ingest serving `harness`'s fresh project on a real socket.
    func withRemoteIngest(_ body: @Sendable (PipelineHarness, String) async throws -> Void) async throws {
        let harness = PipelineHarness()
        try await harness.prepare()
        let configuration = IngestConfiguration(
            port: 0, topics: harness.topics, webhookURLPolicy: .local, operatorKey: Self.operatorKey)
        try await withIngestApplication(harness, configuration: configuration, target: .live) { _, client in
            let port = try #require(client.port)
            try await body(harness, "http://127.0.0.1:\(port)")
        }
    }

    /// The CLI's environment through the API: no database named, so nothing can go there.
    static func remote(_ url: String, key: String) -> [String: String] {
        ["CHECKIN_API_URL": url, "CHECKIN_API_KEY": key, "CHECKIN_DATABASE_URL": "", "CHECKIN_OPERATOR_KEY": operatorKey]
    }

    static func direct(_ harness: PipelineHarness) -> [String: String] {
        ["CHECKIN_SECRET_KEY": harness.secretKey.base64, "CHECKIN_API_URL": ""]
    }

    static let exampleZones = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../../examples/zones.json").standardized.path

    /// Runs a command that must succeed, answering what it printed.
    static func succeed(_ arguments: [String], _ environment: [String: String]) async throws -> String {
        let outcome = try await CommandOutcome.run(arguments, environment: environment)
        #expect(outcome.exitCode == 0, "checkin \(arguments.joined(separator: " ")): \(outcome.standardError)")
        return outcome.standardOutput
    }

    @Test func theCommandsPrintTheSameThroughTheAPIAsOnTheDatabase() async throws {
        try await withRemoteIngest { harness, url in
            let (remote, direct) = (Self.remote(url, key: harness.managementKey), Self.direct(harness))
            let project = ["--project", harness.projectId]

            // Zones: an import through the API, then every read both ways.
            let imported = try await Self.succeed(["zones", "import"] + project + [Self.exampleZones], remote)
            #expect(imported.hasPrefix("imported ") && imported.contains("into \(harness.projectId) as version 2"), "\(imported)")
            let dryRun = try await Self.succeed(["zones", "import", "--dry-run"] + project + [Self.exampleZones], remote)
            #expect(dryRun == (try await Self.succeed(["zones", "import", "--dry-run"] + project + [Self.exampleZones], direct)))
            for read in [["zones", "export"], ["zones", "versions"], ["zones", "show", "--version", "2"]] {
                let throughAPI = try await Self.succeed(read + project, remote)
                #expect(throughAPI == (try await Self.succeed(read + project, direct)), "\(read)")
            }
            let restored = try await Self.succeed(["zones", "restore", "--version", "1", "--if-version", "2"] + project, remote)
            #expect(restored.hasPrefix("restored version 1 of \(harness.projectId) (") && restored.contains("as version 3"), "\(restored)")

            // Keys: made through the API, listed the same (when each was last used aside).
            let created = try await Self.succeed(["keys", "create", "--kind", "device"] + project, remote)
            #expect(created.contains("kind: device") && created.contains("key:  ck_device_"), "\(created)")
            func idsAndKinds(_ table: String) -> [String] {
                table.split(separator: "\n").map { $0.split(separator: " ").prefix(3).joined(separator: " ") }
            }
            let keys = try await Self.succeed(["keys", "list"] + project, remote)
            #expect(idsAndKinds(keys) == idsAndKinds(try await Self.succeed(["keys", "list"] + project, direct)))

            // Webhooks: added, disabled and listed through the API.
            let added = try await Self.succeed(
                ["webhooks", "add", "--url", "http://127.0.0.1:9/remote-\(harness.suffix)"] + project, remote)
            let endpoint = try #require(added.split(separator: "\n").first?.split(separator: " ").last.map(String.init))
            #expect(added.contains("secret:   whsec_"), "\(added)")
            _ = try await Self.succeed(["webhooks", "disable", "--reason", "paused by a test"] + project + [endpoint], remote)
            let listed = try await Self.succeed(["webhooks", "list"] + project, remote)
            #expect(listed.contains("disabled") && listed.contains("paused by a test"), "\(listed)")
            #expect(listed == (try await Self.succeed(["webhooks", "list"] + project, direct)))

            // Deliveries, devices and events: read both ways.
            for read in [
                ["deliveries", "list"], ["devices", "decisions", "phone-\(harness.suffix)"],
                ["devices", "decisions", "--json", "phone-\(harness.suffix)"], ["events", "list", "--json"],
            ] {
                let throughAPI = try await Self.succeed(read + project, remote)
                #expect(throughAPI == (try await Self.succeed(read + project, direct)), "\(read)")
            }
            let erased = try await Self.succeed(["devices", "erase"] + project + ["phone-\(harness.suffix)"], remote)
            #expect(erased.hasPrefix("erased device phone-\(harness.suffix): 0 state"), "\(erased)")

            // Projects, with the operator key.
            let newProject = "remote-\(harness.suffix)"
            let made = try await Self.succeed(["projects", "create", newProject], remote)
            #expect(made.contains("project:        \(newProject)") && made.contains("management key: ck_management_"), "\(made)")
            let throughAPI = try await Self.succeed(["projects", "list"], remote)
            #expect(throughAPI.contains(newProject) && throughAPI.contains(harness.projectId))
        }
    }

    /// A refusal of the API is printed as its problem (title, detail, the fields it names),
    /// and the command exits non-zero.
    @Test func whatTheAPIRefusesIsPrintedAsItsProblem() async throws {
        try await withRemoteIngest { harness, url in
            let remote = Self.remote(url, key: harness.managementKey)
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("remote-\(harness.suffix)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let invalid = directory.appendingPathComponent("zones.json")
            try Data(
                #"{"zones": [{"id": "depot", "fences": [{"id": "gate", "geometry": {"type": "Point", "coordinates": [8.5, 47.3]}, "radius": -5}]}]}"#
                    .utf8
            ).write(to: invalid)

            let refused = try await CommandOutcome.run(
                ["zones", "import", "--project", harness.projectId, invalid.path], environment: remote)
            #expect(refused.exitCode != 0)
            #expect(refused.standardError.contains("The request is invalid: "), "\(refused.standardError)")
            #expect(refused.standardError.contains("problem(s) in the zones; nothing was changed"), "\(refused.standardError)")
            #expect(refused.standardError.contains("zones[depot].fences[gate]: "), "\(refused.standardError)")
            #expect(refused.standardError.contains("(HTTP 400 from PUT \(url)/v1/zones)"), "\(refused.standardError)")

            let device = "nobody-\(harness.suffix)"
            let missing = try await CommandOutcome.run(["devices", "show", "--project", harness.projectId, device], environment: remote)
            #expect(missing.exitCode != 0)
            #expect(
                missing.standardError.contains("Not found: nothing is kept about device \(device) in this project"),
                "\(missing.standardError)")

            let wrongKey = try await CommandOutcome.run(
                ["keys", "list", "--project", harness.projectId], environment: Self.remote(url, key: "ck_management_wrong"))
            #expect(wrongKey.exitCode != 0)
            #expect(
                wrongKey.standardError.contains("HTTP 401") && wrongKey.standardError.contains("CHECKIN_API_KEY"),
                "\(wrongKey.standardError)")

            // A key file, or a directory of keys by project, as mounted secrets are.
            let keys = directory.appendingPathComponent("keys")
            try FileManager.default.createDirectory(at: keys, withIntermediateDirectories: true)
            try Data("\(harness.managementKey)\n".utf8).write(to: keys.appendingPathComponent(harness.projectId))
            var fromFile = Self.remote(url, key: "")
            for path in [keys.appendingPathComponent(harness.projectId).path, keys.path] {
                fromFile["CHECKIN_API_KEY_FILE"] = path
                let listed = try await CommandOutcome.run(["webhooks", "list", "--project", harness.projectId], environment: fromFile)
                #expect(listed.exitCode == 0, "\(path): \(listed.standardError)")
            }
        }
    }

    /// An API that does not answer is named with why, within seconds.
    @Test func anUnreachableAPIFailsAtOnceNamingItsURL() async throws {
        let url = "http://127.0.0.1:\(try freePort())"
        let started = ContinuousClock.now
        let outcome = try await CommandOutcome.run(
            executable: try ServiceProcess.executable(), arguments: ["zones", "export", "--project", "anything"],
            environment: Self.remote(url, key: "ck_management_x"), timeout: .seconds(30))
        #expect(ContinuousClock.now - started < .seconds(10))
        #expect(outcome.exitCode != 0)
        #expect(
            outcome.standardError.contains("cannot reach the API at \(url) (CHECKIN_API_URL): connection refused"),
            "\(outcome.standardError)")
    }

    /// A command the API does not offer says it is database-direct, unless the database is named too.
    @Test func databaseDirectCommandsSaySoWhenOnlyTheAPIIsNamed() async throws {
        let remote = Self.remote("http://127.0.0.1:9", key: "ck_management_x")
        for command in [["migrate"], ["dead-letters", "list", "--topic", "fixes"]] {
            let outcome = try await CommandOutcome.run(command, environment: remote)
            #expect(outcome.exitCode != 0)
            let name = "checkin " + command.prefix(2).filter { !$0.hasPrefix("-") }.joined(separator: " ")
            #expect(outcome.standardError.contains("\(name) is a database-direct command"), "\(command): \(outcome.standardError)")
        }
    }
}
