import Foundation
import Shared

/// Checks a zones document before the engine, the management API or `checkin replay`
/// accepts it, naming every problem: geometry the engine could not evaluate
/// correctly, and settings that could never do what their author meant.
public enum ZoneValidator {
    public static let maximumVertices = 10_000
    public static let maximumCustomDataKeys = 50

    public static func validate(_ document: ZonesDocument) -> [ZoneProblem] {
        var problems: [ZoneProblem] = []
        var zoneIds = Set<String>()
        let allZoneIds = Set(document.zones.map(\.id))
        // Geometry checks dominate and are independent: run them on every core first.
        let geometryProblems = ParallelMap.map(count: document.zones.count) { z in
            document.zones[z].fences.map { GeometryValidation.problems($0) }
        }
        for (z, zone) in document.zones.enumerated() {
            func report(_ problem: String, _ fenceId: String? = nil) {
                problems.append(ZoneProblem(zoneId: zone.id, fenceId: fenceId, problem: problem))
            }
            if zone.id.isEmpty { report("the zone id is empty") }
            if !zoneIds.insert(zone.id).inserted { report("the zone id is used by another zone") }
            if zone.customData.count > maximumCustomDataKeys {
                report("customData has \(zone.customData.count) keys, at most \(maximumCustomDataKeys) are allowed")
            }
            if !zone.minimumRetriggerTime.isFinite || zone.minimumRetriggerTime < 0 {
                report("minimumRetriggerTime must be a finite number of seconds, zero or more")
            }
            if let conditions = zone.conditions {
                for problem in ConditionValidation.problems(conditions, zoneIds: allZoneIds) { report(problem) }
            }
            if let schedule = zone.activeSchedule {
                for problem in ConditionValidation.problems(schedule) { report(problem) }
            }
            var fenceIds = Set<String>()
            for (f, fence) in zone.fences.enumerated() {
                if fence.id.isEmpty { report("a fence id is empty", fence.id) }
                if !fenceIds.insert(fence.id).inserted { report("the fence id is used twice in this zone", fence.id) }
                for problem in geometryProblems[z][f] { report(problem, fence.id) }
            }
            var beaconIds = Set<String>()
            for beacon in zone.beacons {
                if !beaconIds.insert(beacon.id).inserted { report("the beacon id is used twice in this zone", beacon.id) }
                if beacon.uuid == nil && beacon.eddystoneId == nil {
                    report("a beacon needs a uuid or an eddystoneId", beacon.id)
                }
                if let uuid = beacon.uuid, UUID(uuidString: uuid) == nil {
                    report("uuid '\(uuid)' is not a UUID", beacon.id)
                }
                for (name, value) in [("major", beacon.major), ("minor", beacon.minor)] {
                    if let value, !(0...65_535).contains(value) { report("\(name) must be in 0...65535", beacon.id) }
                }
                if !(-200...20).contains(beacon.rssiThreshold) {
                    report("rssiThreshold must be in -200...20 dBm", beacon.id)
                }
            }
        }
        return problems
    }
}

/// Conditions and schedules.
enum ConditionValidation {
    static func problems(_ conditions: ZoneConditions, zoneIds: Set<String>) -> [String] {
        var problems: [String] = []
        for (name, value) in [("minSpeed", conditions.minSpeed), ("maxSpeed", conditions.maxSpeed)] {
            if let value, !value.isFinite || value < 0 { problems.append("conditions.\(name) must be zero or more m/s") }
        }
        if let minimum = conditions.minSpeed, let maximum = conditions.maxSpeed, minimum > maximum {
            problems.append("conditions.minSpeed is above conditions.maxSpeed")
        }
        if let bearing = conditions.bearing {
            for (name, value) in [("from", bearing.from), ("to", bearing.to)] where !(value.isFinite && (0...360).contains(value)) {
                problems.append("conditions.bearing.\(name) must be between 0 and 360 degrees")
            }
        }
        if let percentage = conditions.percentageCrossed, !(percentage.isFinite && (0...100).contains(percentage)) {
            problems.append("conditions.percentageCrossed must be between 0 and 100")
        }
        if let sequential = conditions.sequential {
            if !zoneIds.contains(sequential.afterZoneId) {
                problems.append("conditions.sequential.afterZoneId '\(sequential.afterZoneId)' is not a zone of this document")
            }
            if !sequential.withinSeconds.isFinite || sequential.withinSeconds <= 0 {
                problems.append("conditions.sequential.withinSeconds must be more than zero")
            }
        }
        return problems
    }

    static func problems(_ schedule: ActiveSchedule) -> [String] {
        var problems: [String] = []
        if TimeZone(identifier: schedule.timeZone) == nil {
            problems.append("activeSchedule.timeZone '\(schedule.timeZone)' is not an IANA time zone")
        }
        if schedule.windows.isEmpty { problems.append("activeSchedule has no windows") }
        for (i, window) in schedule.windows.enumerated() {
            if window.days.isEmpty { problems.append("activeSchedule.windows[\(i)].days is empty") }
            for (name, value) in [("start", window.start), ("end", window.end)] where CompiledSchedule.secondsOfDay(value) == nil {
                problems.append("activeSchedule.windows[\(i)].\(name) '\(value)' is not a time HH:MM")
            }
        }
        return problems
    }
}
