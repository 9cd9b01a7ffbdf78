import Foundation
import Shared

/// Zones and trips that each end in one decision with a known reason
/// (docs/evaluation-rules.md#reason-codes):
/// every zone sits on its own, 2 km from the next, so each trip concerns its zone alone.
enum ExplanationTrips {
    static let latitude = 52.5
    static let firstLongitude = 13.3
    static let metresPerDegreeLat = 111_195.0
    static var metresPerDegreeLon: Double { metresPerDegreeLat * cos(latitude * .pi / 180) }
    static let beaconUUID = "E2C56DB5-DFFB-48D2-B060-D0F5A71096E0"

    /// The centre of the `index`th zone.
    static func centre(_ index: Int) -> Position {
        Position(lon: firstLongitude + Double(index) * 0.03, lat: latitude)
    }

    /// A point `north` and `east` metres from the `index`th zone's centre.
    static func near(_ index: Int, north: Double = 0, east: Double = 0) -> Position {
        let c = centre(index)
        return Position(lon: c.lon + east / metresPerDegreeLon, lat: c.lat + north / metresPerDegreeLat)
    }

    static func circle(_ index: Int, id: String) -> FenceDefinition {
        FenceDefinition(id: id, geometry: .point(centre(index)), radius: 100)
    }

    /// Zones for every case; `inactiveHour` is an hour (UTC) in which the scheduled zone is
    /// active for its first minute only, chosen away from the trips' times.
    static func zones(inactiveHour: Int) -> ZonesDocument {
        let hour = String(format: "%02d", inactiveHour)
        return ZonesDocument(zones: [
            ZoneDefinition(id: "z-disabled", name: "Disabled", enabled: false, fences: [circle(0, id: "f-disabled")]),
            ZoneDefinition(
                id: "z-schedule", name: "Scheduled",
                activeSchedule: ActiveSchedule(
                    timeZone: "UTC", windows: [ScheduleWindow(days: Weekday.allCases, start: "\(hour):00", end: "\(hour):01")]),
                fences: [circle(1, id: "f-schedule")]),
            ZoneDefinition(
                id: "z-mrt", name: "MRT", minimumRetriggerTime: 3600, checkOutEnabled: true, fences: [circle(2, id: "f-mrt")]),
            ZoneDefinition(
                id: "z-speed", name: "Speed", conditions: ZoneConditions(maxSpeed: 5), fences: [circle(3, id: "f-speed")]),
            ZoneDefinition(
                id: "z-bearing", name: "Bearing", conditions: ZoneConditions(bearing: BearingRange(from: 80, to: 100)),
                fences: [circle(4, id: "f-bearing")]),
            ZoneDefinition(
                id: "z-percentage", name: "Percentage", conditions: ZoneConditions(percentageCrossed: 50),
                fences: [circle(5, id: "f-percentage")]),
            // Its MRT keeps the device's check-in there in memory past the next zone's window.
            ZoneDefinition(
                id: "z-first", name: "First", minimumRetriggerTime: 3600, fences: [circle(6, id: "f-first")]),
            ZoneDefinition(
                id: "z-second", name: "Second",
                conditions: ZoneConditions(sequential: SequentialCondition(afterZoneId: "z-first", withinSeconds: 300)),
                fences: [circle(7, id: "f-second")]),
            ZoneDefinition(
                id: "z-precise", name: "Precise", conditions: ZoneConditions(minSpeed: 0), fences: [circle(8, id: "f-precise")]),
            ZoneDefinition(
                id: "z-plain", name: "Plain", checkOutEnabled: true, fences: [circle(9, id: "f-plain")]),
            ZoneDefinition(
                id: "z-gate", name: "Gate",
                fences: [
                    FenceDefinition(
                        id: "f-gate", geometry: .lineString([near(10, north: -100), near(10, north: 100)]))
                ]),
            ZoneDefinition(
                id: "z-beacon", name: "Beacon",
                beacons: [BeaconDefinition(id: "b-door", uuid: beaconUUID, rssiThreshold: -70)]),
        ])
    }

    /// One trip and the entry its last fix must leave.
    struct Case: Sendable {
        var name: String
        var outcome: DecisionOutcome
        var reason: DecisionReason?
        var zoneId: String?
        /// The entry's detail holds the numbers behind the decision.
        var detailHolds: @Sendable (DecisionDetail) -> Bool
        /// (seconds after the trip's start, where, how) of each fix.
        var fixes: [Step]
    }

    struct Step: Sendable {
        var at: Double
        var position: Position
        var accuracy: Double? = 5
        var speed: Double? = 1.4
        var bearing: Double? = 90
        var mode: FixMode = .normal
        var beacons: [BeaconSighting] = []
        /// Reuses an earlier step's fix id (a resent fix).
        var fixIdOf: Int? = nil
    }

    static func outside(_ index: Int) -> Position { near(index, east: -400) }

    static let cases: [Case] = [
        Case(
            name: "disabled", outcome: .entered, reason: .zoneDisabled, zoneId: "z-disabled", detailHolds: { $0.isEmpty },
            fixes: [Step(at: 0, position: outside(0)), Step(at: 30, position: centre(0))]),
        Case(
            name: "schedule", outcome: .entered, reason: .zoneInactive, zoneId: "z-schedule", detailHolds: { $0.isEmpty },
            fixes: [Step(at: 0, position: outside(1)), Step(at: 30, position: centre(1))]),
        Case(
            name: "mrt", outcome: .entered, reason: .minimumRetriggerTime, zoneId: "z-mrt",
            detailHolds: { $0.minimumRetriggerTime == 3600 && $0.retriggerUntil != nil },
            fixes: [
                Step(at: 0, position: outside(2)), Step(at: 30, position: centre(2)), Step(at: 60, position: outside(2)),
                Step(at: 90, position: centre(2)),
            ]),
        Case(
            name: "speed-missing", outcome: .entered, reason: .speedMissing, zoneId: "z-speed",
            detailHolds: { $0.speed == nil && $0.maxSpeed == 5 },
            fixes: [Step(at: 0, position: outside(3)), Step(at: 30, position: centre(3), speed: nil)]),
        Case(
            name: "speed-range", outcome: .entered, reason: .speedOutOfRange, zoneId: "z-speed",
            detailHolds: { $0.speed == 12 && $0.maxSpeed == 5 && $0.minSpeed == nil },
            fixes: [Step(at: 0, position: outside(3)), Step(at: 30, position: centre(3), speed: 12)]),
        Case(
            name: "bearing-missing", outcome: .entered, reason: .bearingMissing, zoneId: "z-bearing",
            detailHolds: { $0.bearing == nil && $0.bearingFrom == 80 && $0.bearingTo == 100 },
            fixes: [Step(at: 0, position: outside(4)), Step(at: 30, position: centre(4), bearing: nil)]),
        Case(
            name: "bearing-range", outcome: .entered, reason: .bearingOutOfRange, zoneId: "z-bearing",
            detailHolds: { $0.bearing == 200 && $0.bearingFrom == 80 && $0.bearingTo == 100 },
            fixes: [Step(at: 0, position: outside(4)), Step(at: 30, position: centre(4), bearing: 200)]),
        Case(
            name: "percentage", outcome: .entered, reason: .percentageCrossedNotReached, zoneId: "z-percentage",
            detailHolds: { ($0.percentageReached ?? -1) > 9 && ($0.percentageReached ?? 99) < 11 && $0.percentageRequired == 50 },
            fixes: [Step(at: 0, position: outside(5)), Step(at: 30, position: near(5, north: 90))]),
        Case(
            name: "sequential-none", outcome: .entered, reason: .sequentialNoPriorCheckIn, zoneId: "z-second",
            detailHolds: { $0.afterZoneId == "z-first" && $0.earlierCheckInAt == nil && $0.withinSeconds == 300 },
            fixes: [Step(at: 0, position: outside(7)), Step(at: 30, position: centre(7))]),
        Case(
            name: "sequential-late", outcome: .entered, reason: .sequentialTooLongAgo, zoneId: "z-second",
            detailHolds: { $0.afterZoneId == "z-first" && $0.earlierCheckInAt != nil && $0.withinSeconds == 300 },
            fixes: [
                Step(at: 0, position: outside(6)), Step(at: 30, position: centre(6)), Step(at: 60, position: outside(7)),
                Step(at: 930, position: centre(7)),
            ]),
        Case(
            name: "restart", outcome: .entered, reason: .restartModeConditions, zoneId: "z-precise",
            detailHolds: { $0.conditions == ["speed"] },
            fixes: [Step(at: 0, position: outside(8)), Step(at: 30, position: centre(8), accuracy: 50, mode: .restart)]),
        Case(
            name: "accuracy", outcome: .ignored, reason: .accuracyTooLow, zoneId: "z-plain",
            detailHolds: { $0.accuracy == 150 && $0.maxAccuracy == 100 },
            fixes: [Step(at: 0, position: outside(9)), Step(at: 30, position: centre(9), accuracy: 150)]),
        Case(
            name: "gap", outcome: .ignored, reason: .crossingGapTooLong, zoneId: "z-gate",
            detailHolds: { $0.gapSeconds == 700 && $0.maxCrossingGap == 600 },
            fixes: [Step(at: 0, position: near(10, east: -30)), Step(at: 700, position: near(10, east: 30))]),
        Case(
            name: "crossing-restart", outcome: .ignored, reason: .crossingRestartMode, zoneId: "z-gate",
            detailHolds: { $0.isEmpty },
            fixes: [Step(at: 0, position: near(10, east: -30)), Step(at: 30, position: near(10, east: 30), mode: .restart)]),
        Case(
            name: "beacon", outcome: .ignored, reason: .beaconRSSIBelowThreshold, zoneId: "z-beacon",
            detailHolds: { $0.rssi == -90 && $0.rssiThreshold == -70 && $0.beaconId == "b-door" },
            fixes: [
                Step(at: 0, position: outside(11), beacons: [BeaconSighting(uuid: beaconUUID, rssi: -90)])
            ]),
        Case(
            name: "checked-in", outcome: .checkedIn, reason: nil, zoneId: "z-plain",
            detailHolds: { $0.checkInId != nil },
            fixes: [Step(at: 0, position: outside(9)), Step(at: 30, position: centre(9))]),
        Case(
            name: "checked-out", outcome: .checkedOut, reason: nil, zoneId: "z-plain",
            detailHolds: { $0.reason == "exit" && $0.checkInId != nil },
            fixes: [Step(at: 0, position: outside(9)), Step(at: 30, position: centre(9)), Step(at: 60, position: outside(9))]),
        Case(
            name: "left", outcome: .left, reason: nil, zoneId: "z-disabled", detailHolds: { $0.isEmpty },
            fixes: [Step(at: 0, position: centre(0)), Step(at: 30, position: outside(0))]),
        Case(
            name: "late", outcome: .late, reason: nil, zoneId: nil, detailHolds: { $0.lastFixAt != nil },
            fixes: [Step(at: 0, position: outside(9)), Step(at: 60, position: outside(9)), Step(at: 30, position: outside(9))]),
        Case(
            name: "duplicate", outcome: .duplicate, reason: nil, zoneId: nil, detailHolds: { $0.isEmpty },
            fixes: [Step(at: 0, position: outside(9)), Step(at: 30, position: outside(9), fixIdOf: 0)]),
    ]

    /// The case's fixes for one device, starting at `start`.
    static func fixes(of trip: Case, projectId: String, deviceId: String, start: Date) -> [Fix] {
        trip.fixes.enumerated().map { index, step in
            Fix(
                projectId: projectId, deviceId: deviceId, timestamp: start.addingTimeInterval(step.at),
                lat: step.position.lat, lon: step.position.lon, accuracy: step.accuracy, speed: step.speed,
                bearing: step.bearing, mode: step.mode, beacons: step.beacons,
                fixId: "\(deviceId)-\(step.fixIdOf ?? index)")
        }
    }
}
