import Foundation
import Shared

/// Checks a zones document before the engine, the management API or `checkin replay`
/// accepts it, naming every problem: geometry the engine could not evaluate
/// correctly, settings that could never do what their author meant, and anything
/// beyond `InputLimits` (which keep every event under `InputLimits.maximumEventBytes`).
public enum ZoneValidator {

    public static func validate(_ document: ZonesDocument) -> [ZoneProblem] {
        validate(document.zones, ids: ZoneIds(document.zones))
    }

    /// Checks every zone, on every core: zones are independent once their ids are known.
    /// Problems come zone by zone, in document order.
    static func validate(_ zones: [ZoneDefinition], ids: ZoneIds) -> [ZoneProblem] {
        let chunks = ParallelMap.chunks(count: zones.count) { range in
            var scratch = GeometryValidation.Scratch()
            var problems: [ZoneProblem] = []
            for z in range {
                problems += zoneProblems(zones[z], repeatsAnId: ids.repeated.contains(z), ids: ids, scratch: &scratch)
            }
            return problems
        }
        return chunks.flatMap { $0 }
    }

    private static func zoneProblems(
        _ zone: ZoneDefinition, repeatsAnId: Bool, ids: ZoneIds, scratch: inout GeometryValidation.Scratch
    ) -> [ZoneProblem] {
        var problems: [ZoneProblem] = []
        func report(_ problem: String, _ fenceId: String? = nil) {
            problems.append(ZoneProblem(zoneId: zone.id, fenceId: fenceId, problem: problem))
        }
        func report(_ problem: String, beacon beaconId: String) {
            problems.append(ZoneProblem(zoneId: zone.id, beaconId: beaconId, problem: problem))
        }
        if let problem = InputLimits.identifierProblem(zone.id) { report("the zone id \(problem)") }
        if repeatsAnId { report("the zone id is used by another zone") }
        TextLimits.check(zone.name, "name", InputLimits.maximumNameLength, report: { report($0) })
        TextLimits.check(zone.description, "description", InputLimits.maximumDescriptionLength, report: { report($0) })
        TextLimits.checkCustomData(zone.customData, report: { report($0) })
        // A zone without either could never check anyone in: most likely a document gone wrong.
        if zone.fences.isEmpty && zone.beacons.isEmpty { report("a zone needs at least one fence or beacon") }
        if !zone.minimumRetriggerTime.isFinite || zone.minimumRetriggerTime < 0 {
            report("minimumRetriggerTime must be a finite number of seconds, zero or more")
        }
        if let conditions = zone.conditions {
            for problem in ConditionValidation.problems(conditions, zoneIds: ids) { report(problem) }
        }
        if let schedule = zone.activeSchedule {
            for problem in ConditionValidation.problems(schedule) { report(problem) }
        }
        let repeatedFences = repeatedPositions(zone.fences) { $0.id }
        for f in zone.fences.indices {
            let fence = zone.fences[f]
            if let problem = InputLimits.identifierProblem(fence.id) { report("the fence id \(problem)", fence.id) }
            if repeatedFences.contains(f) { report("the fence id is used twice in this zone", fence.id) }
            TextLimits.check(fence.name, "name", InputLimits.maximumNameLength, report: { report($0, fence.id) })
            TextLimits.check(
                fence.description, "description", InputLimits.maximumDescriptionLength, report: { report($0, fence.id) })
            for problem in GeometryValidation.problems(fence, scratch: &scratch) { report(problem, fence.id) }
        }
        let repeatedBeacons = repeatedPositions(zone.beacons) { $0.id }
        for (b, beacon) in zone.beacons.enumerated() {
            if let problem = InputLimits.identifierProblem(beacon.id) { report("the beacon id \(problem)", beacon: beacon.id) }
            TextLimits.check(beacon.name, "name", InputLimits.maximumNameLength, report: { report($0, beacon: beacon.id) })
            if let id = beacon.eddystoneId, let problem = InputLimits.identifierProblem(id) {
                report("eddystoneId \(problem)", beacon: beacon.id)
            }
            if repeatedBeacons.contains(b) { report("the beacon id is used twice in this zone", beacon: beacon.id) }
            if beacon.uuid == nil && beacon.eddystoneId == nil {
                report("a beacon needs a uuid or an eddystoneId", beacon: beacon.id)
            }
            if let uuid = beacon.uuid, UUID(uuidString: uuid) == nil {
                report("uuid '\(uuid)' is not a UUID", beacon: beacon.id)
            }
            for (name, value) in [("major", beacon.major), ("minor", beacon.minor)] {
                if let value, !(0...65_535).contains(value) { report("\(name) must be in 0...65535", beacon: beacon.id) }
            }
            if !(-200...20).contains(beacon.rssiThreshold) {
                report("rssiThreshold must be in -200...20 dBm", beacon: beacon.id)
            }
        }
        return problems
    }

    /// Positions of elements whose id an earlier element already has: empty for nearly
    /// every zone, and found without building a set for the usual handful of fences.
    private static func repeatedPositions<Element>(_ elements: [Element], id: (Element) -> String) -> Set<Int> {
        var repeated: Set<Int> = []
        if elements.count <= 32 {
            for i in elements.indices {
                let candidate = id(elements[i])
                if elements[..<i].contains(where: { id($0) == candidate }) { repeated.insert(i) }
            }
        } else {
            var seen = Set<String>(minimumCapacity: elements.count)
            for i in elements.indices where !seen.insert(id(elements[i])).inserted { repeated.insert(i) }
        }
        return repeated
    }
}

/// Free-text fields of zones, fences and beacons, bounded by `InputLimits`.
enum TextLimits {
    static func check(_ text: String, _ field: String, _ maximum: Int, report: (String) -> Void) {
        if let problem = InputLimits.textProblem(text, maximumLength: maximum) { report("\(field) \(problem)") }
    }

    static func checkCustomData(_ customData: [String: String], report: (String) -> Void) {
        if customData.count > InputLimits.maximumCustomDataKeys {
            report("customData has \(customData.count) keys, at most \(InputLimits.maximumCustomDataKeys) are allowed")
        }
        func isAcceptable(_ entry: (key: String, value: String)) -> Bool {
            InputLimits.textProblem(entry.key, maximumLength: InputLimits.maximumCustomDataKeyLength) == nil
                && InputLimits.textProblem(entry.value, maximumLength: InputLimits.maximumCustomDataValueLength) == nil
        }
        guard !customData.allSatisfy(isAcceptable) else { return }
        // Sorted, so that problems come in the same order for the same document.
        for key in customData.keys.sorted() {
            if let problem = InputLimits.textProblem(key, maximumLength: InputLimits.maximumCustomDataKeyLength) {
                report("customData key '\(key.prefix(64))' \(problem)")
            }
            if let problem = InputLimits.textProblem(customData[key]!, maximumLength: InputLimits.maximumCustomDataValueLength) {
                report("customData['\(key.prefix(64))'] \(problem)")
            }
        }
    }
}

/// Where each zone id first appears in a document, and which zones repeat an id
/// already taken; the engine keeps the positions as its index of zones by id.
struct ZoneIds: Sendable {
    var positions: [String: Int32] = [:]
    var repeated: Set<Int> = []

    init(_ zones: [ZoneDefinition]) {
        positions.reserveCapacity(zones.count)
        for z in zones.indices {
            var isNew = false
            Self.claim(&positions[zones[z].id, default: -1], for: Int32(z), isNew: &isNew)
            if !isNew { repeated.insert(z) }
        }
    }

    /// One hash lookup per zone: the slot is created empty (-1) and taken if still empty.
    private static func claim(_ slot: inout Int32, for zone: Int32, isNew: inout Bool) {
        if slot < 0 {
            slot = zone
            isNew = true
        }
    }

    func contains(_ id: String) -> Bool { positions[id] != nil }
}

/// Conditions and schedules.
enum ConditionValidation {
    static func problems(_ conditions: ZoneConditions, zoneIds: ZoneIds) -> [String] {
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
