import Foundation
import Shared
import Testing

@testable import Geofence

/// Zone conditions (docs/evaluation-rules.md#conditions) and the weekly schedule
/// (docs/evaluation-rules.md#active-schedule).
@Suite struct ConditionTests {
    static let lat = 51.5074
    static let lon = -0.1278

    @Test(arguments: [
        (359.0, true), (0.0, true), (1.0, true), (2.0, false), (358.0, false), (180.0, false),
    ])
    func bearingRangeThroughNorth(bearing: Double, holds: Bool) throws {
        let conditions = ZoneConditions(bearing: BearingRange(from: 359, to: 1))
        var trip = try Scenario(zones: [circleZone("z", lat: Self.lat, lon: Self.lon, radius: 100, conditions: conditions)])
        #expect(trip.at(0, lat: Self.lat, lon: Self.lon, bearing: bearing).isEmpty == !holds)
    }

    @Test func bearingRangeNeedsABearing() {
        #expect(!ConditionRules.bearingHolds(BearingRange(from: 10, to: 20), bearing: nil))
        #expect(ConditionRules.bearingHolds(BearingRange(from: 10, to: 20), bearing: 20))
        #expect(ConditionRules.bearingHolds(BearingRange(from: 350, to: 10), bearing: 360))
    }

    @Test(arguments: [(nil as Double?, false), (1.9, false), (2.0, true), (10.0, true), (10.1, false)])
    func speedRange(speed: Double?, holds: Bool) throws {
        let conditions = ZoneConditions(minSpeed: 2, maxSpeed: 10)
        var trip = try Scenario(zones: [circleZone("z", lat: Self.lat, lon: Self.lon, radius: 100, conditions: conditions)])
        #expect(trip.at(0, lat: Self.lat, lon: Self.lon, speed: speed).isEmpty == !holds)
    }

    @Test func failedConditionStillRecordsPresence() throws {
        let conditions = ZoneConditions(minSpeed: 2)
        var trip = try Scenario(zones: [circleZone("z", lat: Self.lat, lon: Self.lon, radius: 100, conditions: conditions)])
        #expect(trip.at(0, lat: Self.lat, lon: Self.lon, speed: 1).isEmpty)
        // Speeding up inside is not a new entry.
        #expect(trip.at(10, lat: Self.lat, lon: Self.lon, speed: 5).isEmpty)
    }

    @Test(arguments: [(39.0, true), (41.0, false)])
    func percentageCrossedOfACircle(fromCentre: Double, holds: Bool) throws {
        // 60 % of the way from the boundary (100 m) to the centre is 40 m from the centre.
        let conditions = ZoneConditions(percentageCrossed: 60)
        var trip = try Scenario(zones: [circleZone("z", lat: Self.lat, lon: Self.lon, radius: 100, conditions: conditions)])
        let p = Scenario.offset(Self.lat, Self.lon, metres: fromCentre)
        #expect(trip.at(0, lat: p.lat, lon: p.lon).isEmpty == !holds)
    }

    @Test(arguments: [(55.0, true), (45.0, false)])
    func percentageCrossedOfASquare(fromEdge: Double, holds: Bool) throws {
        // A 200 m square: the deepest point is the centre, 100 m from every side.
        let zone = ZoneDefinition(
            id: "sq", name: "Square", conditions: ZoneConditions(percentageCrossed: 50),
            fences: [FenceDefinition(id: "f", geometry: .polygon([square(lat: Self.lat, lon: Self.lon, side: 200)]))])
        var trip = try Scenario(zones: [zone])
        let p = Scenario.offset(Self.lat, Self.lon, metres: 100 - fromEdge, bearing: 0)
        #expect(trip.at(0, lat: p.lat, lon: p.lon).isEmpty == !holds)
    }

    @Test func interiorDepthOfASquareIsHalfItsSide() {
        let shape = PolygonShape(rings: [square(lat: Self.lat, lon: Self.lon, side: 200)])
        #expect(abs(InteriorDepth.deepest(of: shape) - 100) < 1.5)
    }

    @Test func sequentialWithinWindow() throws {
        let a = circleZone("a", lat: Self.lat, lon: Self.lon, radius: 50, checkOut: false)
        let bCentre = Scenario.offset(Self.lat, Self.lon, metres: 1000)
        let b = circleZone(
            "b", lat: bCentre.lat, lon: bCentre.lon, radius: 50,
            conditions: ZoneConditions(sequential: SequentialCondition(afterZoneId: "a", withinSeconds: 600)))
        let away = Scenario.offset(Self.lat, Self.lon, metres: 3000)
        var noA = try Scenario(zones: [a, b])
        #expect(noA.at(0, lat: bCentre.lat, lon: bCentre.lon).isEmpty)

        var inTime = try Scenario(zones: [a, b])
        #expect(summary(inTime.at(0, lat: Self.lat, lon: Self.lon)) == ["checkin a"])
        inTime.at(100, lat: away.lat, lon: away.lon)
        #expect(summary(inTime.at(600, lat: bCentre.lat, lon: bCentre.lon)) == ["checkin b"])

        var tooLate = try Scenario(zones: [a, b])
        tooLate.at(0, lat: Self.lat, lon: Self.lon)
        tooLate.at(100, lat: away.lat, lon: away.lon)
        #expect(tooLate.at(601, lat: bCentre.lat, lon: bCentre.lon).isEmpty)
    }

    @Test func disabledZoneRecordsPresenceWithoutCheckIn() throws {
        var trip = try Scenario(zones: [circleZone("z", lat: Self.lat, lon: Self.lon, radius: 100, enabled: false)])
        #expect(trip.at(0, lat: Self.lat, lon: Self.lon).isEmpty)
        #expect(trip.state.presentZoneIds == ["z"])
    }
}
