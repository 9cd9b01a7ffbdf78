import ArgumentParser
import Foundation
import Geofence
import Shared

/// `checkin replay`: runs the geofence engine offline over a recorded trip and prints
/// the check-ins and check-outs it decides, to try zones before deploying them.
struct ReplayCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Evaluate a file of fixes offline, against zones.",
        discussion: """
            Prints the events a file of fixes causes with a zones file, as JSON Lines. \
            Events go to stdout in decision order (with --explain, each fix's decision record instead: \
            the entries and reasons the evaluator would record, SPEC section 6). Lines that are not valid \
            fixes are reported on stderr with their line number and skipped, and make the command exit 1 \
            once every other line is replayed; a summary line closes stderr.
            """)

    @Flag(help: "Print each fix's decision record (why it did or did not check in) instead of the events.")
    var explain = false

    @Option(name: .long, help: "The zones document (JSON, as accepted by the management API).")
    var zones: String

    @Option(name: .long, help: "Fixes, one JSON object per line (the wire format of checkin.fixes); '-' reads stdin.")
    var fixes: String

    @Option(help: "Fixes less accurate than this (metres) neither enter nor leave fences.")
    var maxAccuracy: Double = EngineConfiguration().maxAccuracy

    @Option(help: "Metres outside a fence a device must be before it has left.")
    var exitBuffer: Double = EngineConfiguration().exitBuffer

    @Option(help: "Seconds without a fix after which open check-ins time out.")
    var staleAfter: Double = EngineConfiguration().staleAfter

    @Option(help: "Seconds: a geoline crossing needs the previous fix to be at most this old.")
    var maxCrossingGap: Double = EngineConfiguration().maxCrossingGap

    @Option(help: "Seconds of fix time without a sighting after which a beacon zone is left.")
    var beaconExitAfter: Double = EngineConfiguration().beaconExitAfter

    @Option(help: "Metres added to every fence's enclosing circle for restart-mode fixes.")
    var restartTolerance: Double = EngineConfiguration().restartTolerance

    @Option(
        help: ArgumentHelp(
            "When the fixes count as received (RFC 3339); fixes more than --max-clock-skew after it are rejected.",
            discussion: "A file records no receipt times: without this option no fix is rejected for being ahead."))
    var receivedAt: String?

    @Option(help: "Seconds a fix's timestamp may be ahead of --received-at.")
    var maxClockSkew: Double = InputLimits.defaultMaxClockSkew

    func validate() throws {
        if let receivedAt, RFC3339.parse(receivedAt) == nil {
            throw CommandFailure(
                "--received-at '\(receivedAt)' is not an RFC 3339 timestamp (e.g. 2026-11-22T10:00:00Z)", helpOf: Self.self)
        }
        guard maxClockSkew.isFinite, maxClockSkew >= 0 else {
            throw CommandFailure("--max-clock-skew must be zero or more seconds", helpOf: Self.self)
        }
    }

    func run() throws {
        let zonesData: Data
        do {
            zonesData = try Data(contentsOf: URL(fileURLWithPath: zones))
        } catch {
            throw CommandFailure("cannot read the zones file '\(zones)': \(error.localizedDescription)")
        }
        let fixesText: String
        if fixes == "-" {
            fixesText = String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
        } else {
            do {
                fixesText = String(decoding: try Data(contentsOf: URL(fileURLWithPath: fixes)), as: UTF8.self)
            } catch {
                throw CommandFailure("cannot read the fixes file '\(fixes)': \(error.localizedDescription)")
            }
        }
        let configuration = EngineConfiguration(
            maxAccuracy: maxAccuracy, exitBuffer: exitBuffer, staleAfter: staleAfter, maxCrossingGap: maxCrossingGap,
            beaconExitAfter: beaconExitAfter, restartTolerance: restartTolerance)
        var output = ""
        func write(_ line: String) {
            output += line
            output += "\n"
            if output.utf8.count > 1 << 16 {
                FileHandle.standardOutput.write(Data(output.utf8))
                output = ""
            }
        }
        let summary: Replay.Summary
        do {
            summary = try Replay.run(
                zonesJSON: zonesData,
                fixLines: fixesText.split(separator: "\n", omittingEmptySubsequences: false),
                configuration: configuration, receivedAt: receivedAt.flatMap(RFC3339.parse),
                limits: InputLimits(maxClockSkew: maxClockSkew),
                emitEvent: { line in if !explain { write(line) } },
                emitDecision: explain ? { line in write(line) } : nil,
                reportProblem: { FileHandle.standardError.write(Data(($0 + "\n").utf8)) })
        } catch let error as ZoneValidationError {
            for problem in error.problems { FileHandle.standardError.write(Data("\(problem)\n".utf8)) }
            throw ExitCode(2)
        } catch let error as Replay.ZonesError {
            throw CommandFailure(error.description)
        }
        FileHandle.standardOutput.write(Data(output.utf8))
        FileHandle.standardError.write(Data("\(summary)\n".utf8))
        if summary.rejected > 0 { throw ExitCode(1) }
    }
}
