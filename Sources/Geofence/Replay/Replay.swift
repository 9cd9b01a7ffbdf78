import Foundation
import Shared

/// `checkin replay`: the engine run offline over a recorded trip, so that users can
/// see which check-ins and check-outs their zones would produce before deploying
/// them. It lives here, free of I/O, so that it is tested like the engine itself.
public enum Replay {
    /// Counts of what a replay did, for the closing line on stderr.
    public struct Summary: Sendable, Equatable, CustomStringConvertible {
        public var lines = 0
        public var evaluated = 0
        public var late = 0
        public var duplicates = 0
        public var rejected = 0
        public var checkIns = 0
        public var checkOuts = 0

        public init() {}

        public var description: String {
            "\(lines) fix lines: \(evaluated) fixes evaluated, \(late) late, \(duplicates) duplicates, \(rejected) rejected; "
                + "\(checkIns) check-ins, \(checkOuts) check-outs"
        }
    }

    /// Evaluates every line of `fixLines` (one fix per line, as on `checkin.fixes`) in order,
    /// handing each resulting event as one line of JSON to `emitEvent`, and, when
    /// `emitDecision` is given, each fix's decision record (the evaluator's, without the
    /// time it was evaluated, and with the fix's project and device) as one line to it. A
    /// line that is not a valid fix is reported to `reportProblem` with its line number
    /// and skipped (and counted as rejected). The zones apply to every project named by the fixes.
    ///
    /// Invalid zones are refused with their problems before any fix is read, as an import
    /// refuses them, rather than at the first fix of a project.
    ///
    /// A file records no receipt times, so every fix is taken as received at
    /// `receivedAt`: fixes more than `limits.maxClockSkew` after it are refused. Without
    /// it no fix is too far ahead (only the 2000-01-01 floor applies). Either way the
    /// outcome depends on the inputs alone, never on when the replay runs.
    public static func run<Lines: Sequence>(
        zones document: ZonesDocument, fixLines: Lines, configuration: EngineConfiguration = .init(), receivedAt: Date? = nil,
        limits: InputLimits = InputLimits(), emitEvent: (String) -> Void, emitDecision: ((String) -> Void)? = nil,
        reportProblem: (String) -> Void
    ) throws -> Summary where Lines.Element: StringProtocol {
        let problems = ZoneValidator.validate(document)
        guard problems.isEmpty else { throw ZoneValidationError(problems: problems) }
        var engines: [String: GeofenceEngine] = [:]
        var states: [String: [String: DeviceState]] = [:]
        var summary = Summary()
        for (index, line) in fixLines.enumerated() {
            let text = line.trimmingCharacters(in: .whitespacesAndNewlines)
            if text.isEmpty { continue }
            summary.lines += 1
            let fix: Fix
            switch FixJSONDecoder.decode(text.utf8, receivedAt: receivedAt ?? .distantFuture, limits: limits) {
            case .success(let valid): fix = valid
            case .failure(let invalid):
                summary.rejected += 1
                reportProblem("line \(index + 1): \(invalid)")
                continue
            }
            let engine: GeofenceEngine
            if let existing = engines[fix.projectId] {
                engine = existing
            } else {
                engine = try GeofenceEngine(
                    projects: [ProjectZones(projectId: fix.projectId, zones: document.zones)],
                    configuration: configuration)
                engines[fix.projectId] = engine
            }
            var state = states[fix.projectId]?[fix.deviceId] ?? DeviceState()
            let evaluation = engine.evaluate(fix, state: &state)
            states[fix.projectId, default: [:]][fix.deviceId] = state
            switch evaluation.outcome {
            case .evaluated: summary.evaluated += 1
            case .late:
                summary.late += 1
                reportProblem("line \(index + 1): late fix (older than the device's last evaluated fix), skipped")
            case .duplicate: summary.duplicates += 1
            }
            for event in evaluation.events {
                switch event.type {
                case .checkin: summary.checkIns += 1
                case .checkout: summary.checkOuts += 1
                }
                emitEvent(String(decoding: try event.wireJSON(), as: UTF8.self))
            }
            if let emitDecision {
                let record = ReplayedDecision(
                    projectId: fix.projectId, deviceId: fix.deviceId, record: decisionRecord(of: fix, evaluation))
                emitDecision(String(decoding: try WireJSON.encoder().encode(record), as: UTF8.self))
            }
        }
        return summary
    }

    /// The record the evaluator keeps of a fix, as far as it does not depend on when it ran.
    public static func decisionRecord(of fix: Fix, _ evaluation: Evaluation) -> DecisionRecord {
        DecisionRecord(
            fixId: fix.fixId, timestamp: fix.timestamp, mode: fix.mode, location: DecisionLocation(fix),
            entries: evaluation.entries, eventIds: evaluation.events.map(\.eventId))
    }
}

/// One line of `checkin replay --explain`: a decision record with the fix's project and device.
public struct ReplayedDecision: Sendable, Equatable, Codable {
    public var projectId: String
    public var deviceId: String
    public var record: DecisionRecord

    public init(projectId: String, deviceId: String, record: DecisionRecord) {
        self.projectId = projectId
        self.deviceId = deviceId
        self.record = record
    }

    enum CodingKeys: String, CodingKey { case projectId, deviceId }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        projectId = try container.decode(String.self, forKey: .projectId)
        deviceId = try container.decode(String.self, forKey: .deviceId)
        record = try DecisionRecord(from: decoder)
    }

    /// The record's fields and the two identifiers side by side, in one flat object.
    public func encode(to encoder: any Encoder) throws {
        try record.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(projectId, forKey: .projectId)
        try container.encode(deviceId, forKey: .deviceId)
    }
}
