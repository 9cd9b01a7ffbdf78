import Foundation
import Geofence
import Shared

/// The evaluation rules of docs/evaluation-rules.md written out again as plainly as they read,
/// for one device: every zone and every fence is looked at for every fix, nothing is indexed
/// and nothing is remembered beyond what the rules name. It is slow and meant to be: the
/// engine's decisions and decision records are checked against it, so it must be easy to
/// read against the rules, and it shares none of the engine's rule or measuring code.
struct ReferenceRules {
    /// One entry of a decision record, reduced to what the rules decide.
    struct Line: Equatable, CustomStringConvertible {
        var zoneId: String?
        var fenceId: String?
        var outcome: DecisionOutcome
        var reason: DecisionReason?
        /// A check-out's reason: `exit`, `beacon-lost` or `timeout`.
        var checkOutReason: String?
        /// The beacon of a beacon entry, or the beacon heard under its threshold.
        var beaconId: String?

        init(_ entry: DecisionEntry) {
            self.init(
                zoneId: entry.zoneId, fenceId: entry.fenceId, outcome: entry.outcome, reason: entry.reason,
                checkOutReason: entry.detail.reason, beaconId: entry.detail.beaconId)
        }

        init(
            zoneId: String? = nil, fenceId: String? = nil, outcome: DecisionOutcome, reason: DecisionReason? = nil,
            checkOutReason: String? = nil, beaconId: String? = nil
        ) {
            self.zoneId = zoneId
            self.fenceId = fenceId
            self.outcome = outcome
            self.reason = reason
            self.checkOutReason = checkOutReason
            self.beaconId = beaconId
        }

        var description: String {
            var text = "\(zoneId ?? "-")/\(fenceId ?? beaconId ?? "-") \(outcome.rawValue)"
            if let reason { text += " \(reason.rawValue)" }
            if let checkOutReason { text += " (\(checkOutReason))" }
            return text
        }
    }

    /// A check-in or check-out, reduced to what the rules decide.
    struct Event: Equatable, CustomStringConvertible {
        var type: String
        var zoneId: String
        var fenceId: String?
        var beaconId: String?
        var checkOutReason: String?
        var willCheckOut: Bool
        /// A check-out's time in the zone, from its check-in.
        var dwellSeconds: Double?

        init(_ event: CheckEvent) {
            self.init(
                type: event.type.rawValue, zoneId: event.zone.id, fenceId: event.fence?.id, beaconId: event.beacon?.id,
                checkOutReason: event.reason?.rawValue, willCheckOut: event.willCheckOut, dwellSeconds: event.dwellSeconds)
        }

        init(
            type: String, zoneId: String, fenceId: String?, beaconId: String?, checkOutReason: String?, willCheckOut: Bool,
            dwellSeconds: Double? = nil
        ) {
            self.type = type
            self.zoneId = zoneId
            self.fenceId = fenceId
            self.beaconId = beaconId
            self.checkOutReason = checkOutReason
            self.willCheckOut = willCheckOut
            self.dwellSeconds = dwellSeconds
        }

        var description: String {
            "\(type) \(zoneId) \(fenceId ?? beaconId ?? "-") \(checkOutReason ?? "") \(dwellSeconds.map { "\($0) s" } ?? "")"
        }
    }

    struct Decision: Equatable {
        var lines: [Line] = []
        var events: [Event] = []
    }

    /// A fence with what the rules measure against, worked out once.
    struct Fence {
        enum Shape {
            case circle(centre: Position, radius: Double)
            case area(parts: [[[Position]]])
            case line([Position])
        }
        var id: String
        var shape: Shape
        /// The smallest circle holding the fence, the shape a restart-mode fix is judged against.
        var enclosing: (centre: Position, radius: Double)
        /// How deep the fence's deepest point lies, for the percentage crossed.
        var deepest: Double
    }

    struct Zone {
        var definition: ZoneDefinition
        var fences: [Fence]
        var areas: [Fence] { fences.filter { if case .line = $0.shape { false } else { true } } }
        var lines: [Fence] { fences.filter { if case .line = $0.shape { true } else { false } } }
    }

    /// What the rules remember of the device in one zone.
    struct Presence {
        var inFence = false
        var beaconSeenAt: Double?
        var open: (time: Double, fenceId: String?, beaconId: String?)?
        var lastCheckInAt: Double?
        var retriggerFrom: Double?
        var isPresent: Bool { inFence || beaconSeenAt != nil }
    }

    let configuration: EngineConfiguration
    /// Zones in the order a fix decides them: a zone after the zone its sequential condition
    /// names, otherwise by id.
    let zones: [Zone]
    var presence: [String: Presence] = [:]
    var lastTime: Double?
    var recentFixIds: [String] = []
    /// The last fix accurate enough to count, where the next crossing starts.
    var track: (time: Double, at: Position)?

    init(zones definitions: [ZoneDefinition], configuration: EngineConfiguration) {
        self.configuration = configuration
        func chainLength(_ zone: ZoneDefinition) -> Int {
            var length = 0
            var current = zone
            while let after = current.conditions?.sequential?.afterZoneId,
                let next = definitions.first(where: { $0.id == after }), length <= definitions.count
            {
                length += 1
                current = next
            }
            return length
        }
        zones =
            definitions
            .sorted { (chainLength($0), $0.id) < (chainLength($1), $1.id) }
            .map { definition in
                Zone(definition: definition, fences: definition.fences.map(Self.fence))
            }
    }

    static func fence(_ definition: FenceDefinition) -> Fence {
        switch definition.geometry {
        case .point(let centre):
            let radius = definition.radius ?? 0
            return Fence(id: definition.id, shape: .circle(centre: centre, radius: radius), enclosing: (centre, radius), deepest: radius)
        case .polygon(let rings):
            return area(definition.id, parts: [rings])
        case .multiPolygon(let parts):
            return area(definition.id, parts: parts)
        case .lineString(let positions):
            return Fence(id: definition.id, shape: .line(positions), enclosing: (positions[0], 0), deepest: 0)
        }
    }

    static func area(_ id: String, parts: [[[Position]]]) -> Fence {
        let vertices = parts.flatMap { $0.flatMap { $0 } }
        return Fence(
            id: id, shape: .area(parts: parts), enclosing: ReferenceGeometry.enclosingCircle(vertices),
            deepest: ReferenceGeometry.deepestDepth(parts))
    }

    // MARK: Where a fix is

    /// Inside the fence: the circle or the area, or in restart mode its widened enclosing circle.
    func isInside(_ fence: Fence, _ p: Position, restart: Bool) -> Bool {
        if restart {
            return ReferenceGeometry.distance(fence.enclosing.centre, p) <= fence.enclosing.radius + configuration.restartTolerance
        }
        switch fence.shape {
        case .circle(let centre, let radius): return ReferenceGeometry.distance(centre, p) <= radius
        case .area(let parts): return ReferenceGeometry.areaContains(parts, p)
        case .line: return false
        }
    }

    /// Outside the fence but within the exit buffer of it.
    func isInBand(_ fence: Fence, _ p: Position, restart: Bool) -> Bool {
        let buffer = configuration.exitBuffer
        if restart {
            return ReferenceGeometry.distance(fence.enclosing.centre, p)
                <= fence.enclosing.radius + configuration.restartTolerance + buffer
        }
        switch fence.shape {
        case .circle(let centre, let radius): return ReferenceGeometry.distance(centre, p) <= radius + buffer
        case .area(let parts): return ReferenceGeometry.distanceToEdges(parts, p) <= buffer
        case .line: return false
        }
    }

    /// How far into the fence, from its edge towards its deepest point, in percent.
    func percentageCrossed(_ fence: Fence, _ p: Position) -> Double {
        let depth: Double
        switch fence.shape {
        case .circle(let centre, let radius): depth = radius - ReferenceGeometry.distance(centre, p)
        case .area(let parts): depth = ReferenceGeometry.distanceToEdges(parts, p)
        case .line: depth = 0
        }
        return fence.deepest > 0 ? depth / fence.deepest * 100 : 0
    }

    static func crosses(_ fence: Fence, from: Position, to: Position) -> Bool {
        guard case .line(let points) = fence.shape else { return false }
        return (0..<(points.count - 1)).contains { ReferenceGeometry.segmentsCross(from, to, points[$0], points[$0 + 1]) }
    }

    static func identifies(_ beacon: BeaconDefinition, _ sighting: BeaconSighting) -> Bool {
        if let eddystone = beacon.eddystoneId { return sighting.eddystoneId == eddystone }
        return sighting.uuid == beacon.uuid && (beacon.major == nil || sighting.major == beacon.major)
            && (beacon.minor == nil || sighting.minor == beacon.minor)
    }

    // MARK: The zone's own rules

    /// Whether a weekly window holds the instant, read on the wall clock of the schedule's time zone.
    static func isActive(_ schedule: ActiveSchedule, at time: Double) -> Bool {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: schedule.timeZone)!
        let parts = calendar.dateComponents([.weekday, .hour, .minute, .second], from: Date(timeIntervalSince1970: time))
        let second = parts.hour! * 3600 + parts.minute! * 60 + parts.second!
        // Calendar counts Sunday as 1; the schedule's days start on Monday.
        let today = Weekday.allCases[(parts.weekday! + 5) % 7]
        let yesterday = Weekday.allCases[(parts.weekday! + 4) % 7]
        func seconds(_ text: String) -> Int {
            let pieces = text.split(separator: ":").map { Int($0)! }
            return pieces[0] * 3600 + pieces[1] * 60
        }
        return schedule.windows.contains { window in
            let start = seconds(window.start), end = seconds(window.end)
            if start < end { return window.days.contains(today) && second >= start && second < end }
            return (window.days.contains(today) && second >= start) || (window.days.contains(yesterday) && second < end)
        }
    }

    enum Trigger {
        case fence(Fence)
        case beacon(BeaconDefinition)
        case line(Fence)
    }

    /// The first rule, in the order of docs/evaluation-rules.md#check-in, that keeps the entry
    /// from being a check-in.
    func refusal(_ zone: Zone, trigger: Trigger, fix: Fix, at time: Double, memory: Presence) -> DecisionReason? {
        let definition = zone.definition
        if !definition.enabled { return .zoneDisabled }
        if let schedule = definition.activeSchedule, !Self.isActive(schedule, at: time) { return .zoneInactive }
        let conditions = definition.conditions
        if fix.mode == .restart {
            if case .line = trigger { return .crossingRestartMode }
            if let conditions,
                conditions.minSpeed != nil || conditions.maxSpeed != nil || conditions.bearing != nil
                    || conditions.percentageCrossed != nil || conditions.sequential != nil
            {
                return .restartModeConditions
            }
        }
        if let conditions {
            if conditions.minSpeed != nil || conditions.maxSpeed != nil {
                guard let speed = fix.speed else { return .speedMissing }
                if let minimum = conditions.minSpeed, speed < minimum { return .speedOutOfRange }
                if let maximum = conditions.maxSpeed, speed > maximum { return .speedOutOfRange }
            }
            if let range = conditions.bearing {
                guard let bearing = fix.bearing else { return .bearingMissing }
                func turn(_ degrees: Double) -> Double {
                    (degrees.truncatingRemainder(dividingBy: 360) + 360).truncatingRemainder(dividingBy: 360)
                }
                let b = turn(bearing), from = turn(range.from), to = turn(range.to)
                let inArc = from <= to ? (b >= from && b <= to) : (b >= from || b <= to)
                if !inArc { return .bearingOutOfRange }
            }
            if let required = conditions.percentageCrossed, case .fence(let fence) = trigger {
                if percentageCrossed(fence, fix.position) < required { return .percentageCrossedNotReached }
            }
            if let sequential = conditions.sequential {
                guard let earlier = presence[sequential.afterZoneId]?.lastCheckInAt else { return .sequentialNoPriorCheckIn }
                if time - earlier > sequential.withinSeconds { return .sequentialTooLongAgo }
            }
        }
        if let from = memory.retriggerFrom, time - from < definition.minimumRetriggerTime { return .minimumRetriggerTime }
        return nil
    }

    // MARK: One fix

    mutating func evaluate(_ fix: Fix) -> Decision {
        let time = fix.timestamp.timeIntervalSince1970
        if let id = fix.fixId, recentFixIds.contains(id) { return Decision(lines: [Line(outcome: .duplicate)]) }
        if let last = lastTime, time < last { return Decision(lines: [Line(outcome: .late)]) }
        if let id = fix.fixId {
            recentFixIds.append(id)
            if recentFixIds.count > DeviceState.rememberedFixIds { recentFixIds.removeFirst() }
        }
        var decision = Decision()
        var checkIns: [Event] = []
        var unansweredCrossings: [Line] = []
        var weakSightings: [Line] = []

        // A silence of `staleAfter` closes every check-in at its deadline and ends every presence.
        if let last = lastTime, time - last >= configuration.staleAfter {
            for zone in zones {
                guard var memory = presence[zone.definition.id] else { continue }
                if let open = memory.open {
                    decision.lines.append(
                        Line(zoneId: zone.definition.id, fenceId: open.fenceId, outcome: .checkedOut, checkOutReason: "timeout"))
                    decision.events.append(
                        Event(
                            type: "checkout", zoneId: zone.definition.id, fenceId: open.fenceId, beaconId: open.beaconId,
                            checkOutReason: "timeout", willCheckOut: true, dwellSeconds: last + configuration.staleAfter - open.time))
                    memory.open = nil
                    memory.retriggerFrom = last + configuration.staleAfter
                }
                memory.inFence = false
                memory.beaconSeenAt = nil
                presence[zone.definition.id] = memory
            }
        }
        lastTime = time

        let accurate = (fix.accuracy ?? 0) <= configuration.maxAccuracy
        let restart = fix.mode == .restart
        let here = fix.position

        for zone in zones {
            let id = zone.definition.id
            let before = presence[id] ?? Presence()
            var after = before

            let insideFence = zone.areas.first { isInside($0, here, restart: restart) }
            let inBand = insideFence == nil && zone.areas.contains { isInBand($0, here, restart: restart) }
            let heard = zone.definition.beacons.first { beacon in
                fix.beacons.contains { Self.identifies(beacon, $0) && $0.rssi >= beacon.rssiThreshold }
            }

            if accurate {
                if insideFence != nil {
                    after.inFence = true
                } else if !inBand {
                    after.inFence = false
                }
            }
            if heard != nil {
                after.beaconSeenAt = time
            } else if let seen = after.beaconSeenAt, time - seen > configuration.beaconExitAfter {
                after.beaconSeenAt = nil
            }

            // An inaccurate fix that would have entered the zone's fences, or left them.
            if !accurate {
                let wouldEnter = !before.isPresent && insideFence != nil
                let wouldLeave = before.inFence && insideFence == nil && !inBand && after.beaconSeenAt == nil
                if wouldEnter || wouldLeave {
                    decision.lines.append(Line(zoneId: id, fenceId: insideFence?.id, outcome: .ignored, reason: .accuracyTooLow))
                }
            }

            // Leaving: a check-out when a check-in is open, otherwise presence simply ends.
            if before.isPresent, !after.isPresent {
                if let open = after.open {
                    let reason = before.inFence ? "exit" : "beacon-lost"
                    decision.lines.append(Line(zoneId: id, fenceId: open.fenceId, outcome: .checkedOut, checkOutReason: reason))
                    decision.events.append(
                        Event(
                            type: "checkout", zoneId: id, fenceId: open.fenceId, beaconId: open.beaconId, checkOutReason: reason,
                            willCheckOut: true, dwellSeconds: time - open.time))
                    after.open = nil
                    after.retriggerFrom = time
                } else {
                    decision.lines.append(Line(zoneId: id, outcome: .left))
                }
            }

            // A geoline crossed while the device is not in the zone, and stays out of it.
            var crossed: Fence? = nil
            if !before.isPresent, !after.isPresent, let track,
                let line = zone.lines.first(where: { Self.crosses($0, from: track.at, to: here) })
            {
                // A path longer than the gap is no crossing at all (rule 5); within it, an inaccurate
                // fix would have crossed (rule 1), and a restart-mode fix crosses but never triggers (rule 8).
                let notCounted: DecisionReason? =
                    time - track.time > configuration.maxCrossingGap
                    ? .crossingGapTooLong
                    : !accurate
                        ? .accuracyTooLow
                        : restart ? .crossingRestartMode : nil
                if let notCounted {
                    unansweredCrossings.append(Line(zoneId: id, fenceId: line.id, outcome: .ignored, reason: notCounted))
                } else {
                    crossed = line
                }
            }

            // A beacon heard under its threshold while the device is not in the zone, and stays out of it.
            if !before.isPresent, !after.isPresent {
                let weak = fix.beacons.lazy.compactMap { sighting in
                    zone.definition.beacons.first { Self.identifies($0, sighting) && sighting.rssi < $0.rssiThreshold }
                }.first
                if let weak {
                    weakSightings.append(Line(zoneId: id, outcome: .ignored, reason: .beaconRSSIBelowThreshold, beaconId: weak.id))
                }
            }

            var trigger: Trigger? = nil
            if !before.isPresent, after.isPresent {
                if let insideFence, after.inFence { trigger = .fence(insideFence) } else if let heard { trigger = .beacon(heard) }
            } else if let crossed {
                trigger = .line(crossed)
            }
            if let trigger {
                let fenceId: String?, beaconId: String?, isLine: Bool
                switch trigger {
                case .fence(let fence): (fenceId, beaconId, isLine) = (fence.id, nil, false)
                case .beacon(let beacon): (fenceId, beaconId, isLine) = (nil, beacon.id, false)
                case .line(let line): (fenceId, beaconId, isLine) = (line.id, nil, true)
                }
                if let reason = refusal(zone, trigger: trigger, fix: fix, at: time, memory: after) {
                    decision.lines.append(
                        Line(zoneId: id, fenceId: fenceId, outcome: isLine ? .ignored : .entered, reason: reason, beaconId: beaconId))
                } else {
                    let willCheckOut = zone.definition.checkOutEnabled && !isLine
                    decision.lines.append(Line(zoneId: id, fenceId: fenceId, outcome: .checkedIn, beaconId: beaconId))
                    checkIns.append(
                        Event(
                            type: "checkin", zoneId: id, fenceId: fenceId, beaconId: beaconId, checkOutReason: nil,
                            willCheckOut: willCheckOut))
                    after.lastCheckInAt = time
                    if willCheckOut {
                        after.open = (time, fenceId, beaconId)
                        after.retriggerFrom = nil
                    } else {
                        after.retriggerFrom = time
                    }
                }
            }
            presence[id] = after
        }
        if accurate { track = (time, here) }
        decision.lines += unansweredCrossings + weakSightings
        decision.events += checkIns
        return decision
    }
}

extension Fix {
    var position: Position { Position(lon: lon, lat: lat) }
}
