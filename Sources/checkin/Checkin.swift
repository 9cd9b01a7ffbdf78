import ArgumentParser
import Foundation
import ServiceSupport

/// The executable a deployment runs: every service, the local all-in-one mode, and the commands
/// that manage a pipeline. Load and benchmarks are `checkin-bench`'s, never this one's.
///
/// Every option that takes a number reads it with `parsing: .unconditional`, so that a negative
/// one written after a space (`--limit -5`) reaches the command's check of its range instead of
/// being taken for an option and reported as a missing value. A flag in the number's place
/// (`--limit --json`) is still refused: it does not read as a number.
@main
struct Checkin: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "checkin",
        abstract: "Geofence check-ins: fixes in, signed webhooks out.",
        discussion: """
            Devices send location fixes; partners receive signed check-in and check-out webhooks. \
            Configuration is read from environment variables (CHECKIN_KAFKA_BROKERS, CHECKIN_DATABASE_URL, \
            CHECKIN_HTTP_PORT, …); see docs/configuration.md for the full list.
            """,
        version: Checkin.versionDescription,
        subcommands: [
            IngestCommand.self, EvaluatorCommand.self, NotifierCommand.self, DevCommand.self, DemoCommand.self,
            MigrateCommand.self, ReplayCommand.self, ProjectsCommand.self, KeysCommand.self, ZonesCommand.self, WebhooksCommand.self,
            DeliveriesCommand.self, DevicesCommand.self, EventsCommand.self, DeadLettersCommand.self, StatusCommand.self,
        ])
}

extension Checkin {
    /// Commands that log through the services' logger, which names unknown settings itself.
    static let loggingCommands: Set<String> = ["ingest", "evaluator", "notifier", "dev", "demo"]

    /// Names each `CHECKIN_*` variable that is no setting (a misspelt one would be ignored in
    /// silence), then runs the command.
    static func main() async {
        if let command = CommandLine.arguments.dropFirst().first, !loggingCommands.contains(command) {
            for unknown in ConfigurationVariables.unknown(in: ProcessInfo.processInfo.environment) {
                FileHandle.standardError.write(Data("warning: \(unknown.warning)\n".utf8))
            }
        }
        await main(nil)
    }

    /// `0.9.0 (commit 1a2b3c4d5e6f)`: the release and the commit the build was made from
    /// (`-modified` when the tree had uncommitted changes, `unknown` outside a checkout).
    static var versionDescription: String { "\(Release.version) (commit \(buildCommit))" }
}
