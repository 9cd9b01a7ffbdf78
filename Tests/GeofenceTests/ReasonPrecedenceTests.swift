import Foundation
import Shared
import Testing

@testable import Geofence

/// Which reason a refused entry gives (docs/evaluation-rules.md#which-reason): what the zone
/// demands before what the device's history forbids, and a sequential check-in that is old
/// is "too long ago", never "none".
@Suite struct ReasonPrecedenceTests {
    static let lat = 48.8566
    static let lon = 2.3522

    /// The reasons of the device's last fix's entries for `zone`.
    static func reasons(_ trip: Scenario, at seconds: Double, lat: Double, lon: Double, bearing: Double? = nil, zone: String)
        -> [DecisionReason?]
    {
        var state = trip.state
        let fix = Scenario.fix(at: seconds, lat: lat, lon: lon, bearing: bearing, fixId: "probe")
        return trip.engine.evaluate(fix, state: &state).entries.filter { $0.zoneId == zone }.map(\.reason)
    }

    @Test func aConditionOfTheZoneIsTheReasonWhileTheRetriggerTimeAlsoHolds() throws {
        let zone = circleZone(
            "z", lat: Self.lat, lon: Self.lon, radius: 100, mrt: 3600, checkOut: true,
            conditions: ZoneConditions(bearing: BearingRange(from: 80, to: 100)))
        var trip = try Scenario(zones: [zone])
        let far = Scenario.offset(Self.lat, Self.lon, metres: 2000)
        #expect(summary(trip.at(0, lat: Self.lat, lon: Self.lon, bearing: 90)) == ["checkin z"])
        #expect(summary(trip.at(60, lat: far.lat, lon: far.lon)) == ["checkout z exit"])
        // Back within the hour: the bearing is wrong too, and is the reason.
        #expect(Self.reasons(trip, at: 120, lat: Self.lat, lon: Self.lon, bearing: 270, zone: "z") == [.bearingOutOfRange])
        // With the bearing right, the retrigger time is what refuses it.
        #expect(Self.reasons(trip, at: 120, lat: Self.lat, lon: Self.lon, bearing: 90, zone: "z") == [.minimumRetriggerTime])
    }

    @Test func anInactiveScheduleIsTheReasonWhileTheRetriggerTimeAlsoHolds() throws {
        // Scenario time 0 is Monday 12:00 in Paris; the zone is active 12:00 to 12:30 only.
        let schedule = ActiveSchedule(
            timeZone: "Europe/Paris", windows: [ScheduleWindow(days: [.monday], start: "12:00", end: "12:30")])
        var trip = try Scenario(zones: [circleZone("z", lat: Self.lat, lon: Self.lon, radius: 100, mrt: 7200, schedule: schedule)])
        let far = Scenario.offset(Self.lat, Self.lon, metres: 2000)
        #expect(summary(trip.at(0, lat: Self.lat, lon: Self.lon)) == ["checkin z"])
        #expect(summary(trip.at(60, lat: far.lat, lon: far.lon)) == ["checkout z exit"])
        #expect(Self.reasons(trip, at: 600, lat: Self.lat, lon: Self.lon, zone: "z") == [.minimumRetriggerTime])
        #expect(Self.reasons(trip, at: 3600, lat: Self.lat, lon: Self.lon, zone: "z") == [.zoneInactive])
    }

    @Test func aCheckInLongerAgoThanTheWindowIsTooLongAgo() throws {
        let first = circleZone("a", lat: Self.lat, lon: Self.lon, radius: 100)
        let secondCentre = Scenario.offset(Self.lat, Self.lon, metres: 1000)
        let second = circleZone(
            "b", lat: secondCentre.lat, lon: secondCentre.lon, radius: 100,
            conditions: ZoneConditions(sequential: SequentialCondition(afterZoneId: "a", withinSeconds: 300)))
        var trip = try Scenario(zones: [first, second])
        let between = Scenario.offset(Self.lat, Self.lon, metres: 500)
        // Never at "a": none.
        #expect(Self.reasons(trip, at: 0, lat: secondCentre.lat, lon: secondCentre.lon, zone: "b") == [.sequentialNoPriorCheckIn])
        #expect(summary(trip.at(0, lat: Self.lat, lon: Self.lon)) == ["checkin a"])
        #expect(summary(trip.at(10, lat: between.lat, lon: between.lon)) == ["checkout a exit"])
        // Within the window it checks in; 370 s after the check-in at "a", it is too long ago,
        // and a day later still.
        #expect(Self.reasons(trip, at: 200, lat: secondCentre.lat, lon: secondCentre.lon, zone: "b") == [nil])
        #expect(Self.reasons(trip, at: 370, lat: secondCentre.lat, lon: secondCentre.lon, zone: "b") == [.sequentialTooLongAgo])
        trip.at(3600, lat: between.lat, lon: between.lon)
        #expect(Self.reasons(trip, at: 86_400, lat: secondCentre.lat, lon: secondCentre.lon, zone: "b") == [.sequentialTooLongAgo])
    }
}
