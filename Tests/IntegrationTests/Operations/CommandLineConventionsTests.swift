import Foundation
import NIOPosix
import Testing

/// What every `checkin` and `checkin-bench` command keeps to at a terminal: a refusal is one
/// error line and where to read more, not forty lines of usage; help reads whole at 80 columns.
@Suite struct CommandLineConventionsTests {
    let harness = PipelineHarness()
    var environment: [String: String] { ["CHECKIN_SECRET_KEY": harness.secretKey.base64] }

    /// A request a command refuses prints `Error: <what is wrong, naming it>` and a pointer
    /// to the command's help, and exits non-zero.
    @Test func aRefusalIsOneErrorLineAndAHintWithoutTheUsage() async throws {
        try await harness.prepare()
        let nosuch = "nosuch-\(harness.suffix)"
        let zones = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../../examples/zones.json")
        let refusals: [([String], String, String)] = [
            (["deliveries", "list", "--project", nosuch], "--project: no project '\(nosuch)'", "deliveries list"),
            (["deliveries", "list", "--project", harness.projectId, "--status", "bogus"], "--status must be", "deliveries list"),
            (["deliveries", "list", "--project", harness.projectId, "--limit", "0"], "--limit must be", "deliveries list"),
            (
                ["deliveries", "show", "--project", harness.projectId, "dlv_999999999"], "no delivery dlv_999999999 in project",
                "deliveries show"
            ),
            (["webhooks", "add", "--project", harness.projectId, "--url", "ftp://example.com"], "--url ftp://example.com", "webhooks add"),
            (["zones", "import", "--project", nosuch, zones.path], "--project: no project '\(nosuch)'", "zones import"),
            // An empty answer or a change must not be taken for one about a misspelt project.
            (["zones", "export", "--project", nosuch], "--project: no project '\(nosuch)'", "zones export"),
            (["webhooks", "list", "--project", nosuch], "--project: no project '\(nosuch)'", "webhooks list"),
            (
                ["webhooks", "add", "--project", nosuch, "--url", "http://127.0.0.1:9/hook", "--local"],
                "--project: no project '\(nosuch)'", "webhooks add"
            ),
            (["webhooks", "disable", "--project", nosuch, "we_x"], "--project: no project '\(nosuch)'", "webhooks disable"),
            (["events", "list", "--project", nosuch], "--project: no project '\(nosuch)'", "events list"),
            (["devices", "show", "--project", nosuch, "phone-1"], "--project: no project '\(nosuch)'", "devices show"),
            (["devices", "decisions", "--project", nosuch, "phone-1"], "--project: no project '\(nosuch)'", "devices decisions"),
            (["devices", "erase", "--project", nosuch, "phone-1"], "--project: no project '\(nosuch)'", "devices erase"),
            (["deliveries", "replay", "--project", nosuch, "--failed"], "--project: no project '\(nosuch)'", "deliveries replay"),
            (
                ["deliveries", "replay", "--project", harness.projectId], "give the delivery ids to replay, or --failed",
                "deliveries replay"
            ),
            (
                ["deliveries", "replay", "--project", harness.projectId, "dlv_999999999"],
                "not deliveries of project \(harness.projectId): dlv_999999999; none was queued again", "deliveries replay"
            ),
            (["projects", "create", "my project"], "the project id must be 1 to 64 letters", "projects create"),
            (["projects", "create", ""], "the project id must be 1 to 64 letters", "projects create"),
            (["demo", "--timeout=-1"], "--timeout must be from 1 to 3600 seconds", "demo"),
            (["status", "--max-fix-age", "inf"], "--max-fix-age must be a number of seconds", "status"),
        ]
        for (arguments, message, command) in refusals {
            let outcome = try await CommandOutcome.run(arguments, environment: environment)
            expectRefusal(outcome, of: arguments, message: message, help: "checkin \(command)")
        }
        // The load generator and the benchmarks, in their own executable, keep to the same.
        let benchRefusals: [([String], String, String)] = [
            (["notifier", "--deliveries", "0"], "--deliveries and --devices must be at least 1", "notifier"),
            (["notifier", "--concurrency", "0"], "--concurrency must be from 1 to 4096", "notifier"),
            (["notifier", "--stuck-queued", "-1"], "--stuck-queued must be 0 or more", "notifier"),
            (["evaluator", "--side-km", "0"], "--side-km must be more than 0", "evaluator"),
            (["evaluator", "--first-port", "65535", "--evaluators", "2"], "--first-port must leave a port", "evaluator"),
            (["load", "--timeout", "0"], "--timeout must be at least 1 second", "load"),
        ]
        for (arguments, message, command) in benchRefusals {
            let outcome = try await CommandOutcome.runBench(arguments, environment: environment)
            expectRefusal(outcome, of: arguments, message: message, help: "checkin-bench \(command)")
        }
    }

    /// One error line naming what is wrong, then the help of `help` (`checkin deliveries list`).
    private func expectRefusal(_ outcome: CommandOutcome, of arguments: [String], message: String, help: String) {
        let lines = outcome.standardError.split(separator: "\n").map(String.init)
        #expect(outcome.exitCode != 0, "\(arguments)")
        #expect(lines.count == 2, "\(arguments): \(outcome.standardError)")
        #expect(lines.first?.hasPrefix("Error: \(message)") == true, "\(arguments): \(outcome.standardError)")
        #expect(lines.last == "See '\(help) --help'.", "\(arguments): \(outcome.standardError)")
        #expect(!outcome.standardError.contains("USAGE"), "\(arguments): \(outcome.standardError)")
    }

    /// A setting a service cannot use (an interval of 0 would spin, a misspelt log format
    /// would leave a log pipeline reading text) is refused at start, naming the variable.
    @Test func aServiceRefusesASettingItCannotUseNamingIt() async throws {
        try await harness.prepare()
        let settings: [([String], String, String)] = [
            (["evaluator"], "CHECKIN_ZONE_REFRESH_INTERVAL", "0"), (["evaluator"], "CHECKIN_STALE_SWEEP_INTERVAL", "0"),
            (["notifier"], "CHECKIN_WEBHOOK_TIMEOUT", "0"), (["notifier"], "CHECKIN_WEBHOOK_LEASE", "0.01"),
            (["ingest"], "CHECKIN_LOG_LEVEL", "loud"), (["ingest"], "CHECKIN_LOG_FORMAT", "xml"),
        ]
        for (command, variable, value) in settings {
            let outcome = try await CommandOutcome.run(
                executable: try ServiceProcess.executable(), arguments: command,
                environment: environment.merging([variable: value, "CHECKIN_HTTP_PORT": String(try freePort())]) { $1 },
                timeout: .seconds(60))
            #expect(outcome.exitCode != 0, "\(variable)=\(value)")
            #expect(outcome.standardError.contains("\(variable)='\(value)' is not valid"), "\(variable): \(outcome.standardError)")
        }
    }

    /// A service whose HTTP port another process holds says so, naming the setting, before it
    /// starts anything: not a bind error after its other services started and stopped again.
    @Test func aServiceWhosePortIsTakenSaysSoNamingTheSetting() async throws {
        try await harness.prepare()
        let listener = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .bind(host: "127.0.0.1", port: 0).get()
        let port = try #require(listener.localAddress?.port)
        for command in [["dev"], ["ingest"], ["notifier"]] {
            let outcome = try await CommandOutcome.run(
                executable: try ServiceProcess.executable(), arguments: command,
                environment: environment.merging(["CHECKIN_HTTP_PORT": String(port)]) { $1 }, timeout: .seconds(60))
            #expect(outcome.exitCode != 0, "\(command)")
            #expect(
                outcome.standardError.hasPrefix(
                    "Error: 127.0.0.1:\(port) (CHECKIN_HTTP_HOST:CHECKIN_HTTP_PORT) is in use by another process"),
                "\(command): \(outcome.standardError)")
            #expect(outcome.standardError.split(separator: "\n").count == 1, "\(command): \(outcome.standardError)")
        }
        try await listener.close()
    }

    /// Each command's abstract is one line, in its own help and in its parent's list of
    /// subcommands, and no line of any help is wider than the terminal: explanations are in
    /// the discussion, wrapped to the terminal, not in an abstract cut mid-sentence.
    @Test func everyHelpReadsWholeAt80Columns() async throws {
        var pending: [[String]] = [["checkin"], ["checkin-bench"]]
        var seen = 0
        while let path = pending.popLast() {
            seen += 1
            let help = try await CommandOutcome.run(
                executable: try ServiceProcess.executable(named: path[0]), arguments: Array(path.dropFirst()) + ["--help"],
                environment: ["COLUMNS": "80"])
            let lines = help.standardOutput.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            let name = path.joined(separator: " ")
            #expect(help.exitCode == 0, "\(name): \(help.standardError)")
            // Except the usage synopsis, which argument-parser prints on one line whatever the width.
            for line in lines where line.count > 80 && !line.hasPrefix("USAGE:") {
                Issue.record("\(name) --help: wider than 80 columns: \(line)")
            }
            if let overview = lines.firstIndex(where: { $0.hasPrefix("OVERVIEW:") }), overview + 1 < lines.count {
                #expect(lines[overview + 1].isEmpty, "\(name): the abstract wraps: \(lines[overview...overview + 1])")
            }
            guard let start = lines.firstIndex(of: "SUBCOMMANDS:") else { continue }
            for line in lines[(start + 1)...].prefix(while: { !$0.isEmpty }) {
                // A continuation line starts in the abstract column, not with a name.
                guard line.hasPrefix("  "), line.dropFirst(2).first != " " else {
                    Issue.record("\(name) --help: a subcommand's abstract wraps: \(line)")
                    continue
                }
                let subcommand = line.split(separator: " ").first.map(String.init) ?? ""
                if subcommand != "help" { pending.append(path + [subcommand]) }
            }
        }
        #expect(seen > 30)
    }
}

/// A negative number written after a space is its option's value, refused for its range like any
/// other, not taken for an option of its own and reported as a missing value. (Outside the suite:
/// it needs no services.)
@Test func aNegativeNumberAfterASpaceIsRefusedForItsRange() async throws {
    let refusals: [([String], String, String)] = [
        (["zones", "versions", "--project", "p", "--limit", "-5"], "--limit must be between 1 and 1000", "zones versions"),
        (["devices", "decisions", "--project", "p", "d", "--limit", "-5"], "--limit must be from 1 to 1000", "devices decisions"),
        (["keys", "rotate", "--project", "p", "key_x", "--overlap", "-1"], "--overlap must be between 0 and", "keys rotate"),
        (["demo", "--timeout", "-1"], "--timeout must be from 1 to 3600 seconds", "demo"),
        (["status", "--max-lag", "-1"], "--max-lag must be 0 or more", "status"),
        (
            ["replay", "--zones", "zones.json", "--fixes", "trip.jsonl", "--max-accuracy", "-5"],
            "--max-accuracy must be from 0 to 100000 metres", "replay"
        ),
    ]
    for (arguments, message, command) in refusals {
        let outcome = try await CommandOutcome.run(arguments)
        let lines = outcome.standardError.split(separator: "\n").map(String.init)
        #expect(outcome.exitCode == 1, "\(arguments): \(outcome.standardError)")
        #expect(lines.first?.hasPrefix("Error: \(message)") == true, "\(arguments): \(outcome.standardError)")
        #expect(lines.last == "See 'checkin \(command) --help'.", "\(arguments): \(outcome.standardError)")
    }
}

/// The production binary runs no load generator or benchmark: those are `checkin-bench`'s
/// subcommands, and `checkin` refuses them as commands it does not have. (Outside the suite:
/// it needs no services.)
@Test func loadAndBenchmarksAreCheckinBenchsAlone() async throws {
    func subcommands(of help: CommandOutcome) -> [String] {
        let lines = help.standardOutput.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard let start = lines.firstIndex(of: "SUBCOMMANDS:") else { return [] }
        return lines[(start + 1)...].prefix(while: { !$0.isEmpty }).compactMap { line in
            line.dropFirst(2).first == " " ? nil : line.split(separator: " ").first.map(String.init)
        }
    }
    let checkin = subcommands(of: try await CommandOutcome.run(["--help"]))
    #expect(checkin.contains("ingest") && checkin.contains("status"), "\(checkin)")
    #expect(!checkin.contains("load") && !checkin.contains("bench"), "\(checkin)")
    // (Not with --help: argument-parser answers the root's help to that, whatever comes before it.)
    for removed in [["load"], ["bench", "evaluator"]] {
        let outcome = try await CommandOutcome.run(removed)
        #expect(outcome.exitCode != 0, "checkin \(removed.joined(separator: " ")): \(outcome.standardError)")
        let refusal = outcome.standardError.lowercased()
        #expect(refusal.contains("unexpected argument") && refusal.contains("'\(removed[0])'"), "\(outcome.standardError)")
    }
    let bench = subcommands(of: try await CommandOutcome.runBench(["--help"]))
    #expect(bench.filter { $0 != "help" } == ["load", "evaluator", "notifier"], "\(bench)")
}
