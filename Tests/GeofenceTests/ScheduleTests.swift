import Foundation
import Shared
import Testing

@testable import Geofence

/// Weekly schedules in the zone's IANA time zone, across midnight and DST changes.
@Suite struct ScheduleTests {
    static func at(_ text: String) -> Double { RFC3339.parse(text)!.timeIntervalSince1970 }

    static func schedule(_ days: [Weekday], _ start: String, _ end: String, zone: String = "Europe/Paris") -> CompiledSchedule {
        CompiledSchedule(ActiveSchedule(timeZone: zone, windows: [ScheduleWindow(days: days, start: start, end: end)]))!
    }

    @Test(arguments: [
        ("2026-06-01T19:59:59Z", false),  // Monday 21:59:59 CEST
        ("2026-06-01T20:00:00Z", true),  // Monday 22:00
        ("2026-06-01T23:30:00Z", true),  // Tuesday 01:30, still Monday's window
        ("2026-06-01T23:59:59Z", true),  // Tuesday 01:59:59
        ("2026-06-02T00:00:00Z", false),  // Tuesday 02:00: the window has ended
        ("2026-06-02T20:30:00Z", false),  // Tuesday 22:30: not a window day
    ])
    func windowAcrossMidnight(time: String, active: Bool) {
        #expect(Self.schedule([.monday], "22:00", "02:00").isActive(at: Self.at(time)) == active)
    }

    @Test(arguments: [
        ("2026-03-29T00:59:59Z", false),  // 01:59:59 CET, just before the clocks go forward
        ("2026-03-29T01:00:00Z", true),  // 03:00 CEST, the next second on the wall
        ("2026-03-29T01:59:59Z", true),  // 03:59:59 CEST
        ("2026-03-29T02:00:00Z", false),  // 04:00 CEST
    ])
    func springForward(time: String, active: Bool) {
        #expect(Self.schedule([.sunday], "03:00", "04:00").isActive(at: Self.at(time)) == active)
    }

    @Test(arguments: [
        ("2026-10-24T23:59:59Z", false),  // 01:59:59 CEST
        ("2026-10-25T00:30:00Z", true),  // 02:30 CEST, the first time
        ("2026-10-25T01:30:00Z", true),  // 02:30 CET, the second time
        ("2026-10-25T02:00:00Z", false),  // 03:00 CET
    ])
    func fallBack(time: String, active: Bool) {
        #expect(Self.schedule([.sunday], "02:00", "03:00").isActive(at: Self.at(time)) == active)
    }

    @Test func otherHemisphereAndWholeDay() {
        let sydney = Self.schedule([.saturday], "00:00", "24:00", zone: "Australia/Sydney")
        #expect(sydney.isActive(at: Self.at("2026-06-05T14:00:00Z")))  // Saturday 00:00 AEST
        #expect(!sydney.isActive(at: Self.at("2026-06-05T13:59:59Z")))
    }

    @Test func inactiveZoneEntryIsNotACheckIn() throws {
        let schedule = ActiveSchedule(
            timeZone: "Europe/Paris", windows: [ScheduleWindow(days: [.monday], start: "13:00", end: "14:00")])
        var trip = try Scenario(zones: [circleZone("z", lat: 0, lon: 0, radius: 100, schedule: schedule)])
        // Scenario time 0 is Monday 12:00 in Paris.
        #expect(trip.at(0, lat: 0, lon: 0).isEmpty)
        trip.at(10, lat: 1, lon: 1)
        #expect(summary(trip.at(3600, lat: 0, lon: 0)) == ["checkin z"])
    }
}
