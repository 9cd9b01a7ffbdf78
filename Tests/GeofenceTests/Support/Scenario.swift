import Foundation
import Shared

@testable import Geofence

/// Builds fixes and runs them through an engine for one device, so that scenario
/// tests read as a trip: where the device is, when, and what the engine decided.
struct Scenario {
    static let projectId = "p1"
    static let deviceId = "d1"
    /// 2026-06-01T10:00:00Z, a Monday.
    static let start = Date(timeIntervalSince1970: 1_780_308_000)

    let engine: GeofenceEngine
    var state = DeviceState()
    var fixCounter = 0

    init(zones: [ZoneDefinition], configuration: EngineConfiguration = .init()) throws {
        engine = try GeofenceEngine(
            projects: [ProjectZones(projectId: Self.projectId, zones: zones)], configuration: configuration)
    }

    static func fix(
        at seconds: Double, lat: Double, lon: Double, accuracy: Double? = 5, speed: Double? = nil,
        bearing: Double? = nil, mode: FixMode = .normal, beacons: [BeaconSighting] = [], fixId: String? = nil
    ) -> Fix {
        Fix(
            projectId: projectId, deviceId: deviceId, timestamp: start.addingTimeInterval(seconds), lat: lat, lon: lon,
            accuracy: accuracy, speed: speed, bearing: bearing, mode: mode, beacons: beacons, fixId: fixId)
    }

    /// Evaluates a fix and returns its decision record's entries, in short: "z1/f ignored accuracy-too-low".
    mutating func entries(
        _ seconds: Double, lat: Double, lon: Double, accuracy: Double? = 5, mode: FixMode = .normal,
        beacons: [BeaconSighting] = []
    ) -> [String] {
        fixCounter += 1
        let fix = Self.fix(
            at: seconds, lat: lat, lon: lon, accuracy: accuracy, mode: mode, beacons: beacons, fixId: "f\(fixCounter)")
        return engine.evaluate(fix, state: &state).entries.map { entry in
            var text = "\(entry.zoneId ?? "-")/\(entry.fenceId ?? entry.detail.beaconId ?? "-") \(entry.outcome.rawValue)"
            if let reason = entry.reason { text += " \(reason.rawValue)" }
            if let exit = entry.detail.reason { text += " \(exit)" }
            return text
        }
    }

    /// Evaluates a fix and returns its events.
    @discardableResult
    mutating func at(
        _ seconds: Double, lat: Double, lon: Double, accuracy: Double? = 5, speed: Double? = nil,
        bearing: Double? = nil, mode: FixMode = .normal, beacons: [BeaconSighting] = [], fixId: String? = nil
    ) -> [CheckEvent] {
        fixCounter += 1
        let fix = Self.fix(
            at: seconds, lat: lat, lon: lon, accuracy: accuracy, speed: speed, bearing: bearing, mode: mode,
            beacons: beacons, fixId: fixId ?? "f\(fixCounter)")
        return engine.evaluate(fix, state: &state).events
    }

    /// A position `metres` from (lat, lon) along `bearing`.
    static func offset(_ lat: Double, _ lon: Double, metres: Double, bearing: Double = 90) -> (lat: Double, lon: Double) {
        Earth.destination(lat: lat, lon: lon, bearing: bearing, distance: metres)
    }
}

/// Short descriptions of events, easy to compare in expectations: "checkin z1", "checkout z1 exit".
func summary(_ events: [CheckEvent]) -> [String] {
    events.map { event in
        var text = "\(event.type.rawValue) \(event.zone.id)"
        if let reason = event.reason { text += " \(reason.rawValue)" }
        return text
    }
}

func circleZone(
    _ id: String, lat: Double, lon: Double, radius: Double, mrt: Double = 0, checkOut: Bool = true,
    conditions: ZoneConditions? = nil, schedule: ActiveSchedule? = nil, enabled: Bool = true
) -> ZoneDefinition {
    ZoneDefinition(
        id: id, name: "Zone \(id)", customData: ["k": id], minimumRetriggerTime: mrt, checkOutEnabled: checkOut,
        enabled: enabled, conditions: conditions, activeSchedule: schedule,
        fences: [FenceDefinition(id: "\(id)-f", name: "fence", geometry: .point(Position(lon: lon, lat: lat)), radius: radius)])
}

/// A square of `side` metres centred on (lat, lon), closed, counter-clockwise.
func square(lat: Double, lon: Double, side: Double) -> [Position] {
    let dLat = side / 2 / Earth.metresPerDegree
    let dLon = side / 2 / (Earth.metresPerDegree * cos(lat * .pi / 180))
    return [
        Position(lon: lon - dLon, lat: lat - dLat), Position(lon: lon + dLon, lat: lat - dLat),
        Position(lon: lon + dLon, lat: lat + dLat), Position(lon: lon - dLon, lat: lat + dLat),
        Position(lon: lon - dLon, lat: lat - dLat),
    ]
}
