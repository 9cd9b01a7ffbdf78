import Foundation
import PropertyBased
import Shared
import Testing

@testable import Geofence

/// No decision may depend on the order of the zones document
/// (docs/evaluation-rules.md#zone-order): a zone is decided after the zones its sequential
/// condition names, and a fix's events come in an order of their own.
@Suite struct ZoneOrderTests {
    static let lat = 45.4642
    static let lon = 9.19

    static func follower(_ id: String, after: String, radius: Double = 80) -> ZoneDefinition {
        circleZone(
            id, lat: lat, lon: lon, radius: radius,
            conditions: ZoneConditions(sequential: SequentialCondition(afterZoneId: after, withinSeconds: 600)))
    }

    /// One fix enters A and B, and B must follow A: B checks in too (0 s counts),
    /// whichever of the two the document lists first.
    @Test(arguments: [false, true])
    func checkInIntoTheEarlierZoneBySameFixCounts(followerFirst: Bool) throws {
        let a = circleZone("a", lat: Self.lat, lon: Self.lon, radius: 100)
        let b = Self.follower("b", after: "a")
        var trip = try Scenario(zones: followerFirst ? [b, a] : [a, b])
        #expect(summary(trip.at(0, lat: Self.lat, lon: Self.lon)) == ["checkin a", "checkin b"])
    }

    /// A chain A -> B -> C entered by one fix checks in all three, for every order of the document.
    @Test func chainChecksInWholeInAnyDocumentOrder() throws {
        let zones = [
            circleZone("a", lat: Self.lat, lon: Self.lon, radius: 100), Self.follower("b", after: "a"),
            Self.follower("c", after: "b"),
        ]
        for order in [[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]] {
            var trip = try Scenario(zones: order.map { zones[$0] })
            #expect(summary(trip.at(0, lat: Self.lat, lon: Self.lon)) == ["checkin a", "checkin b", "checkin c"], "\(order)")
        }
    }

    @Test func depthsFollowTheChainsAndLoops() {
        // 1 -> 0; 2 -> 1; 3 -> 4 -> 3 (a loop); 5 -> 3; 6 -> 6.
        let depths = SequentialOrder.depths(follows: [1: 0, 2: 1, 3: 4, 4: 3, 5: 3, 6: 6])
        #expect(depths == [1: 1, 2: 2, 3: 2, 4: 2, 5: 3, 6: 1])
    }

    /// Random overlapping zones, some following others, and a random walk through
    /// them: the events are the same, in the same order, for a shuffled document.
    @Test func eventsDoNotDependOnTheOrderOfTheZonesDocument() async {
        await propertyCheck(count: 40, input: Gen.int(in: 0...Int(Int32.max))) { seed in
            var rng = SplitMix(seed: UInt64(seed))
            let zones = Self.randomZones(count: 10, rng: &rng)
            var shuffled = zones
            shuffled.shuffle(using: &rng)
            let fixes = Self.randomWalk(count: 40, rng: &rng)
            let original = Self.events(zones: zones, fixes: fixes)
            let reordered = Self.events(zones: shuffled, fixes: fixes)
            #expect(original == reordered, "seed \(seed): \(summary(original)) vs \(summary(reordered))")
        }
    }

    /// Circles around one point, most overlapping, some with MRT or check-out, about
    /// half following another zone (chains and loops included).
    static func randomZones(count: Int, rng: inout SplitMix) -> [ZoneDefinition] {
        (0..<count).map { i in
            let centre = Earth.destination(
                lat: lat, lon: lon, bearing: Double.random(in: 0..<360, using: &rng),
                distance: Double.random(in: 0...150, using: &rng))
            var conditions: ZoneConditions? = nil
            if Bool.random(using: &rng) {
                let after = Int.random(in: 0..<count, using: &rng)
                conditions = ZoneConditions(
                    sequential: SequentialCondition(
                        afterZoneId: "z\(after)", withinSeconds: Double.random(in: 30...900, using: &rng).rounded()))
            }
            return circleZone(
                "z\(i)", lat: centre.lat, lon: centre.lon, radius: Double.random(in: 60...250, using: &rng).rounded(),
                mrt: [0, 0, 120, 600].randomElement(using: &rng)!, checkOut: Bool.random(using: &rng),
                conditions: conditions)
        }
    }

    /// Fixes every 20-90 s, wandering in and out of the zones.
    static func randomWalk(count: Int, rng: inout SplitMix) -> [Fix] {
        var time = 0.0
        return (0..<count).map { k in
            time += Double.random(in: 20...90, using: &rng).rounded()
            let p = Earth.destination(
                lat: lat, lon: lon, bearing: Double.random(in: 0..<360, using: &rng),
                distance: Double.random(in: 0...500, using: &rng))
            return Scenario.fix(at: time, lat: p.lat, lon: p.lon, fixId: "f\(k)")
        }
    }

    static func events(zones: [ZoneDefinition], fixes: [Fix]) -> [CheckEvent] {
        let engine = try! GeofenceEngine(projects: [ProjectZones(projectId: Scenario.projectId, zones: zones)])
        var state = DeviceState()
        return fixes.flatMap { engine.evaluate($0, state: &state).events }
    }
}
