import Foundation
import Shared

/// A zone to decide for the fix, and its run of hits.
struct ZoneTurn {
    var zone: Int32
    var hits: Range<Int>
}

/// What set off an entry.
enum Trigger {
    case fence(Int32)
    case beacon(Int32)
    case geoline(Crossing)
}

extension GeofenceEngine {
    /// Applies presence, check-out and check-in rules to every zone the fix concerns:
    /// zones with a hit and zones the device is already in. A fix's check-outs come
    /// before its check-ins, and zones are decided in `decidesBefore` order, never in
    /// the order of the zones document: a zone with a sequential condition after the
    /// zone it names, so that a check-in there by the same fix counts
    /// (docs/evaluation-rules.md#zone-order). The entries of crossings that did not
    /// count and of beacons heard under their threshold come last, in the same order.
    func decide(
        _ context: FixContext, hits: inout HitList, crossings: [Crossing], weakSightings: [WeakSighting],
        state: inout DeviceState, events: inout [CheckEvent], entries: inout [DecisionEntry]
    ) {
        hits.sort()
        let lookup = tables.zoneIndex[Int(context.project)]
        var checkIns: [CheckEvent] = []
        var notes = Notes(weakSightings: weakSightings)
        let capacity = hits.count + state.zones.count
        withUnsafeTemporaryAllocation(of: Int32.self, capacity: capacity) { touched in
            var count = 0
            func add(_ zone: Int32) {
                var j = count - 1
                while j >= 0, touched[j] > zone { j -= 1 }
                if j >= 0, touched[j] == zone { return }
                var k = count
                while k > j + 1 {
                    touched[k] = touched[k - 1]
                    k -= 1
                }
                touched[j + 1] = zone
                count += 1
            }
            for i in 0..<hits.count { add(hits[i].zone) }
            if !state.zones.isEmpty {
                // Zones deleted since the state was written are forgotten without events.
                var forgotten = false
                for memory in state.zones {
                    if let z = lookup[memory.zoneId] { add(z) } else { forgotten = true }
                }
                if forgotten { state.zones.removeAll { lookup[$0.zoneId] == nil } }
            }
            withUnsafeTemporaryAllocation(of: ZoneTurn.self, capacity: count) { turns in
                // Hits are sorted by zone, as `touched` is: each zone's hits are the next run.
                var cursor = 0
                for i in 0..<count {
                    let start = cursor
                    while cursor < hits.count, hits[cursor].zone == touched[i] { cursor += 1 }
                    var k = i
                    while k > 0, decidesBefore(touched[i], turns[k - 1].zone) {
                        turns[k] = turns[k - 1]
                        k -= 1
                    }
                    turns[k] = ZoneTurn(zone: touched[i], hits: start..<cursor)
                }
                for turn in turns[0..<count] {
                    decideZone(
                        turn.zone, context: context, hits: hits, range: turn.hits, crossings: crossings, state: &state,
                        checkOuts: &events, checkIns: &checkIns, entries: &entries, notes: &notes)
                }
            }
        }
        events.append(contentsOf: checkIns)
        entries.append(contentsOf: notes.uncountedCrossings)
        entries.append(contentsOf: notes.weakSightings)
    }

    /// The order in which the zones of one fix are decided: zones that follow others
    /// (`CompiledZone.sequentialDepth`) after them, then by zone id, so that decisions
    /// and the order of events are the same whatever the order of the zones document.
    func decidesBefore(_ a: Int32, _ b: Int32) -> Bool {
        let depthA = tables.zones[Int(a)].sequentialDepth, depthB = tables.zones[Int(b)].sequentialDepth
        if depthA != depthB { return depthA < depthB }
        let idA = tables.zones[Int(a)].summary.id, idB = tables.zones[Int(b)].summary.id
        return idA != idB ? idA < idB : a < b
    }

    private func decideZone(
        _ z: Int32, context: FixContext, hits: HitList, range: Range<Int>, crossings: [Crossing],
        state: inout DeviceState, checkOuts: inout [CheckEvent], checkIns: inout [CheckEvent],
        entries: inout [DecisionEntry], notes: inout Notes
    ) {
        let zone = tables.zones[Int(z)]
        let time = context.time
        let existing = state.memoryIndex(of: zone.summary.id)
        var memory = existing.map { state.zones[$0] } ?? ZoneMemory(zoneId: zone.summary.id)

        var insideFence: Int32 = -1
        var inBand = false
        var crossing: Crossing? = nil
        var beacon: Int32 = -1
        var weak: Int32 = -1
        for i in range {
            let hit = hits[i]
            switch hit.kind {
            case .inside: if insideFence < 0 { insideFence = hit.reference }
            case .band: inBand = true
            case .nearPolygon:
                if memory.fenceInside, !inBand {
                    let fence = tables.fences[Int(hit.reference)]
                    let distance = tables.polygons[Int(fence.shape)].distanceToBoundary(
                        lon: context.fix.lon, lat: context.fix.lat, limit: configuration.exitBuffer)
                    inBand = distance <= configuration.exitBuffer
                }
            case .crossing:
                // One crossing per zone: of its first geoline in the zone's order, as with fences.
                let found = crossings[Int(hit.reference)]
                if crossing.map({ found.fence < $0.fence }) ?? true { crossing = found }
            case .beacon: if beacon < 0 { beacon = hit.reference }
            case .weakBeacon: if weak < 0 { weak = hit.reference }
            }
        }

        let wasPresent = memory.isPresent
        let wasInFence = memory.fenceInside
        if context.usable {
            if insideFence >= 0 {
                memory.fenceInside = true
            } else if !inBand {
                memory.fenceInside = false
            }
        }
        if beacon >= 0 {
            memory.beaconSeen = time
        } else if let seen = memory.beaconSeen, time - seen > configuration.beaconExitAfter {
            memory.beaconSeen = nil
        }
        let isPresent = memory.isPresent
        let zoneId = zone.summary.id

        if !context.usable, context.located {
            // Too inaccurate to move the device in or out of a fence: say what it would have done.
            let wouldEnter = !wasPresent && insideFence >= 0
            let wouldLeave = wasInFence && insideFence < 0 && !inBand && memory.beaconSeen == nil
            if wouldEnter || wouldLeave {
                var detail = DecisionDetail()
                detail.accuracy = context.fix.accuracy
                detail.maxAccuracy = configuration.maxAccuracy
                entries.append(
                    DecisionEntry(
                        zoneId: zoneId, fenceId: insideFence >= 0 ? tables.fenceInfos[Int(insideFence)].id : nil,
                        outcome: .ignored, reason: .accuracyTooLow, detail: detail))
            }
        }

        if wasPresent, !isPresent {
            if let open = memory.open {
                let reason: CheckOutReason = wasInFence ? .exit : .beaconLost
                checkOuts.append(
                    checkOutEvent(
                        zone: zone, open: open, projectId: context.fix.projectId, deviceId: context.fix.deviceId,
                        time: time, location: EventLocation(context.fix), mode: context.fix.mode,
                        fixId: context.fix.fixId, reason: reason))
                var detail = DecisionDetail()
                detail.reason = reason.rawValue
                detail.checkInId = open.checkInId
                entries.append(
                    DecisionEntry(zoneId: zoneId, fenceId: open.fenceId, outcome: .checkedOut, detail: detail))
                memory.open = nil
                memory.retriggerFrom = time
            } else {
                entries.append(DecisionEntry(zoneId: zoneId, outcome: .left))
            }
        }

        // A crossing or a weak sighting is an entry only into a zone the device was out of and
        // stays out of: judged against the state earlier fixes left, not the one this fix leaves.
        let staysOut = !wasPresent && !isPresent
        var trigger: Trigger? = nil
        if !wasPresent, isPresent {
            trigger = insideFence >= 0 && memory.fenceInside ? .fence(insideFence) : beacon >= 0 ? .beacon(beacon) : nil
        } else if staysOut, let crossing {
            if let reason = context.crossingRefusal {
                notes.uncountedCrossings.append(uncountedEntry(crossing, reason: reason, zoneId: zoneId, context: context))
            } else {
                trigger = .geoline(crossing)
            }
        }
        if staysOut, weak >= 0 { notes.weakSightings.append(weakEntry(notes.heardUnderThreshold[Int(weak)], zoneId: zoneId)) }
        if let trigger, memory.open == nil {
            if let refusal = refusal(zone, trigger: trigger, context: context, memory: memory, state: state) {
                var entry = DecisionEntry(
                    zoneId: zoneId, fenceId: fenceId(of: trigger), outcome: isPresent ? .entered : .ignored,
                    reason: refusal.reason, detail: refusal.detail)
                if case .beacon(let b) = trigger { entry.detail.beaconId = tables.beacons[Int(b)].summary.id }
                entries.append(entry)
            } else {
                let event = checkInEvent(zone: zone, trigger: trigger, context: context)
                checkIns.append(event)
                var detail = DecisionDetail()
                detail.checkInId = event.checkInId
                detail.beaconId = event.beacon?.id
                entries.append(
                    DecisionEntry(zoneId: zoneId, fenceId: event.fence?.id, outcome: .checkedIn, detail: detail))
                memory.lastCheckIn = time
                if event.willCheckOut {
                    memory.open = OpenCheckIn(
                        checkInId: event.checkInId, time: time, fenceId: event.fence?.id, beaconId: event.beacon?.id)
                    memory.retriggerFrom = nil
                } else {
                    memory.retriggerFrom = time
                }
            }
        } else if !wasPresent, isPresent {
            entries.append(DecisionEntry(zoneId: zoneId, outcome: .entered))
        }

        let keep = isWorthKeeping(memory, zone: zone, time: time)
        if let existing {
            if keep { state.zones[existing] = memory } else { state.zones.remove(at: existing) }
        } else if keep {
            if state.zones.count >= DeviceState.rememberedZones { forgetOldestIdleZone(&state) }
            state.zones.append(memory)
        }
    }

    func fenceId(of trigger: Trigger) -> String? {
        switch trigger {
        case .fence(let f): tables.fenceInfos[Int(f)].id
        case .geoline(let crossing): tables.fenceInfos[Int(crossing.fence)].id
        case .beacon: nil
        }
    }

    /// Why an entry (or a geoline crossing) is not a check-in under rule 2's conditions,
    /// with the numbers the failing rule looked at; nil when it is one. The rules are
    /// tried in a fixed order and the first that fails is the reason: disabled, schedule,
    /// restart mode, speed, bearing, percentage crossed, sequential, minimum retrigger time
    /// (docs/evaluation-rules.md).
    private func refusal(
        _ zone: CompiledZone, trigger: Trigger, context: FixContext, memory: ZoneMemory, state: DeviceState
    ) -> Refusal? {
        let time = context.time
        let fix = context.fix
        guard zone.enabled else { return Refusal(.zoneDisabled) }
        if let schedule = tables.schedule(of: zone), !schedule.isActive(at: time) { return Refusal(.zoneInactive) }
        let conditions = tables.conditions(of: zone)
        if fix.mode == .restart {
            if case .geoline = trigger { return Refusal(.crossingRestartMode) }
            if zone.needsPreciseFix {
                var refusal = Refusal(.restartModeConditions)
                refusal.detail.conditions = conditions.map(Self.preciseConditionNames) ?? []
                return refusal
            }
        }
        guard let conditions else { return retriggerRefusal(zone, memory: memory, time: time) }
        if !ConditionRules.speedHolds(conditions, speed: fix.speed) {
            var refusal = Refusal(fix.speed == nil ? .speedMissing : .speedOutOfRange)
            refusal.detail.speed = fix.speed
            refusal.detail.minSpeed = conditions.minSpeed
            refusal.detail.maxSpeed = conditions.maxSpeed
            return refusal
        }
        if let range = conditions.bearing, !ConditionRules.bearingHolds(range, bearing: fix.bearing) {
            var refusal = Refusal(fix.bearing == nil ? .bearingMissing : .bearingOutOfRange)
            refusal.detail.bearing = fix.bearing
            refusal.detail.bearingFrom = range.from
            refusal.detail.bearingTo = range.to
            return refusal
        }
        if let required = conditions.percentageCrossed, case .fence(let f) = trigger {
            let fence = tables.fences[Int(f)]
            let deepest = tables.interiorDepth[f] ?? 0
            let depth: Double
            if fence.kind == .circle {
                depth =
                    fence.radius
                    - Earth.distance(lat1: fence.centreLat, lon1: fence.centreLon, lat2: fix.lat, lon2: fix.lon)
            } else {
                depth = tables.polygons[Int(fence.shape)].distanceToBoundary(lon: fix.lon, lat: fix.lat)
            }
            if !ConditionRules.percentageHolds(required, depth: depth, deepest: deepest) {
                var refusal = Refusal(.percentageCrossedNotReached)
                refusal.detail.percentageReached = deepest > 0 ? (depth / deepest * 100 * 10).rounded() / 10 : 0
                refusal.detail.percentageRequired = required
                return refusal
            }
        }
        if let sequential = conditions.sequential {
            let earlier = state.zones.first { $0.zoneId == sequential.afterZoneId }?.lastCheckIn
            if !ConditionRules.sequentialHolds(sequential, earlierCheckIn: earlier, time: time) {
                var refusal = Refusal(earlier == nil ? .sequentialNoPriorCheckIn : .sequentialTooLongAgo)
                refusal.detail.afterZoneId = sequential.afterZoneId
                refusal.detail.earlierCheckInAt = earlier.map { Date(timeIntervalSince1970: $0) }
                refusal.detail.withinSeconds = sequential.withinSeconds
                return refusal
            }
        }
        return retriggerRefusal(zone, memory: memory, time: time)
    }

    /// Rule 2's last test: what the device's own history forbids comes after everything the
    /// zone itself demands, so that the reason given is the zone's when both apply.
    private func retriggerRefusal(_ zone: CompiledZone, memory: ZoneMemory, time: Double) -> Refusal? {
        guard let from = memory.retriggerFrom, time - from < zone.minimumRetriggerTime else { return nil }
        var refusal = Refusal(.minimumRetriggerTime)
        refusal.detail.retriggerUntil = Date(timeIntervalSince1970: from + zone.minimumRetriggerTime)
        refusal.detail.minimumRetriggerTime = zone.minimumRetriggerTime
        return refusal
    }

    /// The conditions a restart-mode fix cannot be trusted to meet (`ZoneConditions.needsPreciseFix`).
    static func preciseConditionNames(_ conditions: ZoneConditions) -> [String] {
        var names: [String] = []
        if conditions.minSpeed != nil || conditions.maxSpeed != nil { names.append("speed") }
        if conditions.bearing != nil { names.append("bearing") }
        if conditions.percentageCrossed != nil { names.append("percentageCrossed") }
        if conditions.sequential != nil { names.append("sequential") }
        return names
    }

    /// A geoline crossing that did not count (too long since the previous fix, too inaccurate
    /// a fix, a restart-mode fix), with the numbers of its rule.
    func uncountedEntry(_ crossing: Crossing, reason: DecisionReason, zoneId: String, context: FixContext) -> DecisionEntry {
        var detail = DecisionDetail()
        switch reason {
        case .crossingGapTooLong:
            detail.gapSeconds = context.crossingGap
            detail.maxCrossingGap = configuration.maxCrossingGap
        case .accuracyTooLow:
            detail.accuracy = context.fix.accuracy
            detail.maxAccuracy = configuration.maxAccuracy
        default: break
        }
        return DecisionEntry(
            zoneId: zoneId, fenceId: tables.fenceInfos[Int(crossing.fence)].id, outcome: .ignored, reason: reason, detail: detail)
    }

    /// A beacon of the zone heard under its threshold.
    func weakEntry(_ sighting: WeakSighting, zoneId: String) -> DecisionEntry {
        let beacon = tables.beacons[Int(sighting.beacon)]
        var detail = DecisionDetail()
        detail.beaconId = beacon.summary.id
        detail.rssi = sighting.rssi
        detail.rssiThreshold = beacon.rssiThreshold
        return DecisionEntry(zoneId: zoneId, outcome: .ignored, reason: .beaconRSSIBelowThreshold, detail: detail)
    }

    private func forgetOldestIdleZone(_ state: inout DeviceState) {
        var oldest: Int? = nil
        var oldestTime = Double.infinity
        for (i, memory) in state.zones.enumerated() where !memory.isPresent && memory.open == nil {
            let time = max(memory.lastCheckIn ?? -.infinity, memory.retriggerFrom ?? -.infinity)
            if time < oldestTime {
                oldestTime = time
                oldest = i
            }
        }
        if let oldest { state.zones.remove(at: oldest) }
    }
}

/// The entries a fix's decisions set aside for the end of its record: crossings that did not
/// count, then beacons heard under their threshold, each in the order zones are decided.
struct Notes {
    var heardUnderThreshold: [WeakSighting]
    var uncountedCrossings: [DecisionEntry] = []
    var weakSightings: [DecisionEntry] = []

    init(weakSightings: [WeakSighting]) {
        heardUnderThreshold = weakSightings
    }
}

/// Why a check-in was refused, and the numbers behind it.
struct Refusal {
    var reason: DecisionReason
    var detail = DecisionDetail()

    init(_ reason: DecisionReason) {
        self.reason = reason
    }
}
