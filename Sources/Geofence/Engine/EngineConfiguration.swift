import Foundation
import Shared

/// The tunables of docs/evaluation-rules.md in one value, so that the Evaluator, `checkin replay`
/// and the tests all run the engine with the same knobs.
public struct EngineConfiguration: Sendable, Equatable {
    /// Fixes less accurate than this (metres) neither enter nor leave fences.
    public var maxAccuracy: Double
    /// Hysteresis band (metres) outside a fence in which a device inside stays inside.
    public var exitBuffer: Double
    /// Silence after which an open check-in is closed with reason `timeout`.
    public var staleAfter: TimeInterval
    /// A geoline crossing needs the previous fix to be at most this old.
    public var maxCrossingGap: TimeInterval
    /// Seconds of fix time without a sighting after which a beacon zone is left.
    public var beaconExitAfter: TimeInterval
    /// Metres added to a fence's minimum enclosing circle for restart-mode fixes.
    public var restartTolerance: Double

    public init(
        maxAccuracy: Double = 100, exitBuffer: Double = 20, staleAfter: TimeInterval = 7200,
        maxCrossingGap: TimeInterval = 600, beaconExitAfter: TimeInterval = 60, restartTolerance: Double = 50
    ) {
        self.maxAccuracy = maxAccuracy
        self.exitBuffer = exitBuffer
        self.staleAfter = staleAfter
        self.maxCrossingGap = maxCrossingGap
        self.beaconExitAfter = beaconExitAfter
        self.restartTolerance = restartTolerance
    }

    // The values each setting may take, so that the evaluator's `CHECKIN_*` variables and
    // `checkin replay`'s options refuse the same ones: outside them a setting means nothing
    // (a negative accuracy checks nothing in) or stops the engine from deciding at all.
    public static let maxAccuracyRange: ClosedRange<Double> = 0...100_000
    public static let exitBufferRange: ClosedRange<Double> = 0...10_000
    public static let staleAfterRange: ClosedRange<TimeInterval> = 1...31_536_000
    public static let maxCrossingGapRange: ClosedRange<TimeInterval> = 1...86_400
    public static let beaconExitAfterRange: ClosedRange<TimeInterval> = 1...86_400
    public static let restartToleranceRange: ClosedRange<Double> = 0...10_000
}

/// The zones of one project, the unit in which zones are managed and replaced.
public struct ProjectZones: Sendable {
    public var projectId: String
    public var zones: [ZoneDefinition]

    public init(projectId: String, zones: [ZoneDefinition]) {
        self.projectId = projectId
        self.zones = zones
    }
}

/// What the engine decided for one fix.
public struct Evaluation: Sendable, Equatable {
    public var outcome: EvaluationOutcome
    /// Check-outs and check-ins in decision order.
    public var events: [CheckEvent]
    /// Why: one entry per zone whose relation the fix changed or would have changed, or
    /// the one entry of a fix not evaluated (docs/evaluation-rules.md#decision-records).
    public var entries: [DecisionEntry]

    public init(outcome: EvaluationOutcome, events: [CheckEvent] = [], entries: [DecisionEntry] = []) {
        self.outcome = outcome
        self.events = events
        self.entries = entries
    }
}

/// Whether a fix was evaluated or skipped, so that callers can count late and resent fixes.
public enum EvaluationOutcome: Sendable, Equatable {
    case evaluated
    /// Older than the device's last evaluated fix: skipped.
    case late
    /// A `fixId` evaluated before: skipped.
    case duplicate
}
