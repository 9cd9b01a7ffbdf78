import Foundation
import Shared
import Testing

@testable import Geofence

/// The engine's decision entries (docs/evaluation-rules.md#decision-records) agree with the events it decides, and
/// a zone the fix had nothing to do with gets none.
@Suite struct DecisionEntryTests {
    static let lat = 48.8566
    static let lon = 2.3522

    /// Random zones (some with conditions, MRTs, check-outs) and random walks with
    /// random accuracy, speed, bearing and mode: every event has its entry (the same
    /// check-in id, a check-out's reason), every checked-in or checked-out entry its
    /// event, and reasons appear only where the outcome is `entered` or `ignored`.
    @Test(arguments: 1...6 as ClosedRange<UInt64>)
    func entriesMatchTheEventsOfRandomTrips(seed: UInt64) throws {
        var rng = SplitMix(seed: seed)
        var zones = RandomWorld.zones(count: 60, lat: Self.lat, lon: Self.lon, spread: 3_000, rng: &rng)
        for index in zones.indices {
            zones[index].checkOutEnabled = Bool.random(using: &rng)
            zones[index].minimumRetriggerTime = [0, 60, 600].randomElement(using: &rng)!
            switch Int.random(in: 0..<5, using: &rng) {
            case 0: zones[index].conditions = ZoneConditions(maxSpeed: 3)
            case 1: zones[index].conditions = ZoneConditions(bearing: BearingRange(from: 0, to: 180))
            case 2: zones[index].conditions = ZoneConditions(percentageCrossed: 40)
            default: break
            }
        }
        let engine = try GeofenceEngine(projects: [ProjectZones(projectId: Scenario.projectId, zones: zones)])
        var checkIns = 0
        var reasons: Set<DecisionReason> = []
        for device in 0..<20 {
            var state = DeviceState()
            var position = Earth.destination(
                lat: Self.lat, lon: Self.lon, bearing: Double.random(in: 0..<360, using: &rng),
                distance: Double.random(in: 0...3_000, using: &rng))
            var time = 0.0
            for step in 0..<150 {
                position = Earth.destination(
                    lat: position.lat, lon: position.lon, bearing: Double.random(in: 0..<360, using: &rng),
                    distance: Double.random(in: 0...400, using: &rng))
                time += Double.random(in: 5...120, using: &rng)
                let fix = Fix(
                    projectId: Scenario.projectId, deviceId: "d\(device)",
                    timestamp: Scenario.start.addingTimeInterval(time), lat: position.lat, lon: position.lon,
                    accuracy: Double.random(in: 3...160, using: &rng),
                    speed: Bool.random(using: &rng) ? Double.random(in: 0...8, using: &rng) : nil,
                    bearing: Double.random(in: 0..<360, using: &rng),
                    mode: Int.random(in: 0..<10, using: &rng) == 0 ? .restart : .normal, fixId: "d\(device)-\(step)")
                let evaluation = engine.evaluate(fix, state: &state)
                try Self.check(evaluation)
                checkIns += evaluation.events.filter { $0.type == .checkin }.count
                reasons.formUnion(evaluation.entries.compactMap(\.reason))
            }
        }
        // The trips did decide things, and were refused for more than one reason.
        #expect(checkIns > 0)
        #expect(reasons.count >= 3, "reasons seen: \(reasons)")
    }

    static func check(_ evaluation: Evaluation) throws {
        for event in evaluation.events {
            let outcome: DecisionOutcome = event.type == .checkin ? .checkedIn : .checkedOut
            let entry = try #require(
                evaluation.entries.first { $0.outcome == outcome && $0.detail.checkInId == event.checkInId },
                "no entry for \(event.type) \(event.zone.id)")
            #expect(entry.zoneId == event.zone.id)
            if event.type == .checkout { #expect(entry.detail.reason == event.reason?.rawValue) }
        }
        let decided = evaluation.entries.filter { $0.outcome == .checkedIn || $0.outcome == .checkedOut }
        #expect(decided.count == evaluation.events.count)
        for entry in evaluation.entries where entry.reason != nil {
            #expect(entry.outcome == .entered || entry.outcome == .ignored, "\(entry)")
        }
    }

    /// A fix far from every zone, and one that stays inside, leave no entries.
    @Test func unchangedRelationsLeaveNoEntries() throws {
        let engine = try Scenario(zones: [circleZone("z", lat: Self.lat, lon: Self.lon, radius: 100)]).engine
        let far = Scenario.offset(Self.lat, Self.lon, metres: 2_000)
        var state = DeviceState()
        #expect(engine.evaluate(Scenario.fix(at: 0, lat: far.lat, lon: far.lon, fixId: "a"), state: &state).entries.isEmpty)
        let entered = engine.evaluate(Scenario.fix(at: 10, lat: Self.lat, lon: Self.lon, fixId: "b"), state: &state)
        #expect(entered.entries.map(\.outcome) == [.checkedIn])
        #expect(engine.evaluate(Scenario.fix(at: 20, lat: Self.lat, lon: Self.lon, fixId: "c"), state: &state).entries.isEmpty)
        let resent = engine.evaluate(Scenario.fix(at: 20, lat: Self.lat, lon: Self.lon, fixId: "c"), state: &state)
        #expect(resent.outcome == .duplicate && resent.entries.map(\.outcome) == [.duplicate])
        let late = engine.evaluate(Scenario.fix(at: 5, lat: Self.lat, lon: Self.lon, fixId: "d"), state: &state)
        #expect(late.entries.map(\.outcome) == [.late])
        #expect(late.entries.first?.detail.lastFixAt == Scenario.start.addingTimeInterval(20))
    }

    /// Entries written by hand read back as the Codable types say.
    @Test func entriesRoundTripThroughTheirWireJSON() throws {
        var detail = DecisionDetail()
        detail.speed = 12
        detail.maxSpeed = 5
        detail.retriggerUntil = Scenario.start
        detail.conditions = ["speed", "bearing"]
        let entries = [
            DecisionEntry(zoneId: "z", fenceId: "f", outcome: .entered, reason: .speedOutOfRange, detail: detail),
            DecisionEntry(outcome: .late),
        ]
        let written = try entries.wireJSON()
        #expect(written == Array(try WireJSON.encoder().encode(entries)))
        #expect(try WireJSON.decoder().decode([DecisionEntry].self, from: Data(written)) == entries)
    }

    /// Whole records, with and without their optional members, as the encoder writes them.
    @Test func recordsRoundTripThroughTheirWireJSON() throws {
        let records = [
            DecisionRecord(
                fixId: "f-1", timestamp: Scenario.start, evaluatedAt: Scenario.start.addingTimeInterval(0.25), mode: .restart,
                location: DecisionLocation(lat: 52.5, lon: -0.125, accuracy: 12, speed: 1.5, bearing: 270),
                entries: [DecisionEntry(zoneId: "z", outcome: .checkedIn)], eventIds: ["e-1", "e-2"]),
            DecisionRecord(
                fixId: nil, timestamp: Scenario.start, mode: .normal, location: DecisionLocation(lat: 0, lon: 1e-05),
                entries: [], eventIds: []),
        ]
        for record in records {
            let written = try record.wireJSON()
            #expect(written == Array(try WireJSON.encoder().encode(record)))
            #expect(try WireJSON.decoder().decode(DecisionRecord.self, from: Data(written)) == record)
        }
    }
}
