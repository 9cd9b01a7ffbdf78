import ArgumentParser
import CommandSupport
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
            the entries and reasons the evaluator would record: docs/http-api.md, "Why didn't it check in?"). Lines that are not valid \
            fixes are reported on stderr with their line number and skipped, and make the command exit 1 \
            once every other line is replayed; a summary line closes stderr. The zones file is read and \
            refused as `checkin zones import` reads it, and each number is held to the range of its \
            CHECKIN_* setting.
            """)

    @Flag(help: "Print each fix's decision record (why it did or did not check in) instead of the events.")
    var explain = false

    @Option(name: .long, help: "The zones document (JSON, as accepted by the management API).")
    var zones: String

    @Option(name: .long, help: "Fixes, one JSON object per line (the wire format of checkin.fixes); '-' reads stdin.")
    var fixes: String

    @Option(parsing: .unconditional, help: "Fixes less accurate than this (metres) neither enter nor leave fences.")
    var maxAccuracy: Double = EngineConfiguration().maxAccuracy

    @Option(parsing: .unconditional, help: "Metres outside a fence a device must be before it has left.")
    var exitBuffer: Double = EngineConfiguration().exitBuffer

    @Option(parsing: .unconditional, help: "Seconds without a fix after which open check-ins time out.")
    var staleAfter: Double = EngineConfiguration().staleAfter

    @Option(parsing: .unconditional, help: "Seconds: a geoline crossing needs the previous fix to be at most this old.")
    var maxCrossingGap: Double = EngineConfiguration().maxCrossingGap

    @Option(parsing: .unconditional, help: "Seconds of fix time without a sighting after which a beacon zone is left.")
    var beaconExitAfter: Double = EngineConfiguration().beaconExitAfter

    @Option(parsing: .unconditional, help: "Metres added to every fence's enclosing circle for restart-mode fixes.")
    var restartTolerance: Double = EngineConfiguration().restartTolerance

    @Option(
        help: ArgumentHelp(
            "When the fixes count as received (RFC 3339); fixes more than --max-clock-skew after it are rejected.",
            discussion: "A file records no receipt times: without this option no fix is rejected for being ahead."))
    var receivedAt: String?

    @Option(parsing: .unconditional, help: "Seconds a fix's timestamp may be ahead of --received-at.")
    var maxClockSkew: Double = InputLimits.defaultMaxClockSkew

    @Flag(help: "Skip members a fix does not have, as services with CHECKIN_FIXES_IGNORE_UNKNOWN_MEMBERS=true do.")
    var ignoreUnknownMembers = false

    /// Holds each number to the range the services hold the matching `CHECKIN_*` setting to:
    /// outside it a replay would decide what no evaluator can (a negative accuracy checks nothing in).
    func validate() throws {
        if let receivedAt, RFC3339.parse(receivedAt) == nil {
            throw CommandFailure(
                "--received-at '\(receivedAt)' is not an RFC 3339 timestamp (e.g. 2026-11-22T10:00:00Z)", helpOf: Self.self)
        }
        let settings: [(option: String, value: Double, range: ClosedRange<Double>, unit: String)] = [
            ("--max-accuracy", maxAccuracy, EngineConfiguration.maxAccuracyRange, "metres"),
            ("--exit-buffer", exitBuffer, EngineConfiguration.exitBufferRange, "metres"),
            ("--stale-after", staleAfter, EngineConfiguration.staleAfterRange, "seconds"),
            ("--max-crossing-gap", maxCrossingGap, EngineConfiguration.maxCrossingGapRange, "seconds"),
            ("--beacon-exit-after", beaconExitAfter, EngineConfiguration.beaconExitAfterRange, "seconds"),
            ("--restart-tolerance", restartTolerance, EngineConfiguration.restartToleranceRange, "metres"),
            ("--max-clock-skew", maxClockSkew, InputLimits.maxClockSkewRange, "seconds"),
        ]
        // A range never holds NaN, and every upper bound is finite, so `inf` and `nan` are refused too.
        for setting in settings where !setting.range.contains(setting.value) {
            throw CommandFailure(
                "\(setting.option) must be from \(Self.number(setting.range.lowerBound)) to "
                    + "\(Self.number(setting.range.upperBound)) \(setting.unit)", helpOf: Self.self)
        }
    }

    /// `100000`, not `100000.0`.
    private static func number(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(value)
    }

    func run() throws {
        // With `zones import`'s code, so that both refuse the same documents in the same words.
        let document = try loadZonesDocument(path: zones, naming: "--zones \(zones)")
        let fixesText: String
        if fixes == "-" {
            fixesText = String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
        } else {
            fixesText = String(decoding: try readInputFile(fixes, naming: "--fixes \(fixes)"), as: UTF8.self)
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
        let summary = try Replay.run(
            zones: document,
            fixLines: fixesText.split(separator: "\n", omittingEmptySubsequences: false),
            configuration: configuration, receivedAt: receivedAt.flatMap(RFC3339.parse),
            limits: InputLimits(maxClockSkew: maxClockSkew, ignoresUnknownFixMembers: ignoreUnknownMembers),
            emitEvent: { line in if !explain { write(line) } },
            emitDecision: explain ? { line in write(line) } : nil,
            reportProblem: { FileHandle.standardError.write(Data(($0 + "\n").utf8)) })
        FileHandle.standardOutput.write(Data(output.utf8))
        FileHandle.standardError.write(Data("\(summary)\n".utf8))
        if summary.rejected > 0 { throw ExitCode(1) }
    }
}
