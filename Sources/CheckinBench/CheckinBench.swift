import ArgumentParser
import CommandSupport
import Foundation
import ServiceSupport

/// The load generator and the benchmarks, kept out of the `checkin` the deployment ships: what
/// the production binary can run serves or manages the pipeline, never floods it.
///
/// Every option that takes a number reads it with `parsing: .unconditional`, as `checkin`'s do,
/// so that a negative one written after a space reaches the command's check of its range.
@main
struct CheckinBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "checkin-bench",
        abstract: "Load and benchmarks for a checkin pipeline.",
        discussion: """
            Drives an ingest with generated trips (load), and measures evaluator processes on a backlog \
            (evaluator) or the webhook dispatcher alone (notifier). Reads the same CHECKIN_* variables as \
            checkin (CHECKIN_DATABASE_URL, CHECKIN_KAFKA_BROKERS, …). Meant for the project's own machines \
            and test clusters, not a production deployment.
            """,
        subcommands: [LoadCommand.self, EvaluatorBench.self, NotifierBench.self])
}

extension CheckinBench {
    /// Names each `CHECKIN_*` variable that is no setting (a misspelt one would be ignored in
    /// silence), then runs the command.
    static func main() async {
        for unknown in ConfigurationVariables.unknown(in: ProcessInfo.processInfo.environment) {
            FileHandle.standardError.write(Data("warning: \(unknown.warning)\n".utf8))
        }
        await main(nil)
    }
}

extension CommandFailure {
    /// A request a `checkin-bench` command refuses: `message` names the option or argument at
    /// fault, and the failure points to that command's help.
    init(_ message: String, helpOf command: any ParsableCommand.Type) {
        self.init(message, helpOf: command, in: CheckinBench.self)
    }
}
