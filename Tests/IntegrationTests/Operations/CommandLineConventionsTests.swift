import Foundation
import Testing

/// What every `checkin` command keeps to at a terminal: a refusal is one error line and
/// where to read more, not forty lines of usage.
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
            (["deliveries", "show", "--project", harness.projectId, "0"], "no delivery 0 in project", "deliveries show"),
            (["webhooks", "add", "--project", harness.projectId, "--url", "ftp://example.com"], "--url ftp://example.com", "webhooks add"),
            (["zones", "import", "--project", nosuch, zones.path], "--project: no project '\(nosuch)'", "zones import"),
        ]
        for (arguments, message, command) in refusals {
            let outcome = try await CommandOutcome.run(arguments, environment: environment)
            let lines = outcome.standardError.split(separator: "\n").map(String.init)
            #expect(outcome.exitCode != 0, "\(arguments)")
            #expect(lines.count == 2, "\(arguments): \(outcome.standardError)")
            #expect(lines.first?.hasPrefix("Error: \(message)") == true, "\(arguments): \(outcome.standardError)")
            #expect(lines.last == "See 'checkin \(command) --help'.", "\(arguments): \(outcome.standardError)")
            #expect(!outcome.standardError.contains("USAGE"), "\(arguments): \(outcome.standardError)")
        }
    }
}
