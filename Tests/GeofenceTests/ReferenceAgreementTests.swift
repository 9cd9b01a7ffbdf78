import Foundation
import Geofence
import Shared
import Testing

/// The engine against `ReferenceRules`, the rules written out plainly: on random trips among
/// zones of every kind and every rule, both must decide the same events and give the same
/// decision records (zone, fence or beacon, outcome, reason), fix by fix
/// (docs/evaluation-rules.md#decision-records).
@Suite struct ReferenceAgreementTests {
    static let seeds: ClosedRange<UInt64> = 1...20
    static let fixesPerTrip = 200

    /// What went differently on one fix of one trip.
    struct Disagreement: CustomStringConvertible {
        var seed: UInt64
        var fixNumber: Int
        var fix: Fix
        var engine: ReferenceRules.Decision
        var reference: ReferenceRules.Decision

        /// Each line one side gave and the other did not, or "order" when both gave the same ones.
        var kinds: [String] {
            func key(_ line: ReferenceRules.Line) -> String { "\(line.outcome.rawValue) \(line.reason?.rawValue ?? "")" }
            var kinds: [String] = []
            var remaining = reference.lines
            for line in engine.lines {
                if let i = remaining.firstIndex(of: line) { remaining.remove(at: i) } else { kinds.append("extra " + key(line)) }
            }
            kinds += remaining.map { "missing " + key($0) }
            if kinds.isEmpty, engine.lines != reference.lines { kinds.append("entry order") }
            if engine.events != reference.events { kinds.append("events") }
            return kinds
        }

        var description: String {
            """
            seed \(seed), fix \(fixNumber) at +\(Int(fix.timestamp.timeIntervalSince1970 - RandomTrip.start)) s \
            (\(fix.lat), \(fix.lon)) accuracy \(fix.accuracy.map { "\(Int($0))" } ?? "none") \(fix.mode.rawValue), \
            \(fix.beacons.count) sightings
              engine:    \(engine.lines) \(engine.events)
              reference: \(reference.lines) \(reference.events)
            """
        }
    }

    /// Runs one seeded trip through both; returns what they disagreed on and what the trip exercised.
    static func run(seed: UInt64, coverage: inout [String: Int]) throws -> [Disagreement] {
        var trip = RandomTrip(seed: seed)
        let configuration = trip.configuration
        let engine = try GeofenceEngine(projects: [ProjectZones(projectId: "p1", zones: trip.zones)], configuration: configuration)
        var reference = ReferenceRules(zones: trip.zones, configuration: configuration)
        var state = DeviceState()
        var walk = RandomTrip.Walk()
        var disagreements: [Disagreement] = []
        for number in 0..<fixesPerTrip {
            let fix = trip.nextFix(&walk, number: number) { reference.isAmbiguous($0) }
            let evaluation = engine.evaluate(fix, state: &state)
            let fromEngine = ReferenceRules.Decision(
                lines: evaluation.entries.map(ReferenceRules.Line.init), events: evaluation.events.map(ReferenceRules.Event.init))
            let fromReference = reference.evaluate(fix)
            if fromEngine != fromReference {
                disagreements.append(Disagreement(seed: seed, fixNumber: number, fix: fix, engine: fromEngine, reference: fromReference))
            }
            for line in fromReference.lines {
                coverage["outcome " + line.outcome.rawValue, default: 0] += 1
                if let reason = line.reason { coverage["reason " + reason.rawValue, default: 0] += 1 }
                if line.outcome == .checkedIn { coverage["check-in by " + triggerKind(line, zones: trip.zones), default: 0] += 1 }
            }
        }
        return disagreements
    }

    /// Which kind of fence (or a beacon) a check-in came from.
    static func triggerKind(_ line: ReferenceRules.Line, zones: [ZoneDefinition]) -> String {
        if line.beaconId != nil { return "beacon" }
        let fence = zones.lazy.flatMap(\.fences).first { $0.id == line.fenceId }
        switch fence?.geometry {
        case .point: return "circle"
        case .polygon, .multiPolygon: return "polygon"
        case .lineString: return "geoline"
        case nil: return "nothing"
        }
    }

    @Test func engineAndReferenceAgreeOnRandomTrips() throws {
        var coverage: [String: Int] = [:]
        var disagreements: [Disagreement] = []
        for seed in Self.seeds { disagreements += try Self.run(seed: seed, coverage: &coverage) }

        var byKind: [String: Int] = [:]
        for disagreement in disagreements {
            for kind in Set(disagreement.kinds) { byKind[kind, default: 0] += 1 }
        }
        #expect(
            disagreements.isEmpty,
            """
            \(disagreements.count) fixes decided differently; by kind: \(byKind.sorted { $0.key < $1.key })
            the first (each names its seed: `seeds` set to that one alone replays its trip):
            \(disagreements.prefix(8).map(\.description).joined(separator: "\n"))
            """)

        // The generator must keep producing every reason, every outcome and every kind of trigger,
        // or the agreement above says nothing about them.
        for reason in DecisionReason.allCases {
            #expect(coverage["reason " + reason.rawValue, default: 0] >= 3, "reason \(reason.rawValue) seen too seldom: \(coverage)")
        }
        for outcome in DecisionOutcome.allCases {
            #expect(coverage["outcome " + outcome.rawValue, default: 0] >= 3, "outcome \(outcome.rawValue) seen too seldom")
        }
        for kind in ["circle", "polygon", "geoline", "beacon"] {
            #expect(coverage["check-in by " + kind, default: 0] >= 3, "check-ins by \(kind) seen too seldom: \(coverage)")
        }
    }
}
