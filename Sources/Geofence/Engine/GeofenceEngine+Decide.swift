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
    /// zone it names, so that a check-in there by the same fix counts (SPEC 3.7).
    func decide(
        _ context: FixContext, hits: inout HitList, crossings: [Crossing], state: inout DeviceState,
        events: inout [CheckEvent]
    ) {
        hits.sort()
        let lookup = tables.zoneIndex[Int(context.project)]
        var checkIns: [CheckEvent] = []
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
                        checkOuts: &events, checkIns: &checkIns)
                }
            }
        }
        events.append(contentsOf: checkIns)
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
        state: inout DeviceState, checkOuts: inout [CheckEvent], checkIns: inout [CheckEvent]
    ) {
        let zone = tables.zones[Int(z)]
        let time = context.time
        let existing = state.memoryIndex(of: zone.summary.id)
        var memory = existing.map { state.zones[$0] } ?? ZoneMemory(zoneId: zone.summary.id)

        var insideFence: Int32 = -1
        var inBand = false
        var crossing: Crossing? = nil
        var beacon: Int32 = -1
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
            case .crossing: if crossing == nil { crossing = crossings[Int(hit.reference)] }
            case .beacon: if beacon < 0 { beacon = hit.reference }
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

        if wasPresent, !isPresent, let open = memory.open {
            checkOuts.append(
                checkOutEvent(
                    zone: zone, open: open, projectId: context.fix.projectId, deviceId: context.fix.deviceId,
                    time: time, location: EventLocation(context.fix), mode: context.fix.mode,
                    fixId: context.fix.fixId, reason: wasInFence ? .exit : .beaconLost))
            memory.open = nil
            memory.retriggerFrom = time
        }

        var trigger: Trigger? = nil
        if !wasPresent, isPresent {
            trigger = insideFence >= 0 && memory.fenceInside ? .fence(insideFence) : beacon >= 0 ? .beacon(beacon) : nil
        } else if !isPresent, let crossing {
            trigger = .geoline(crossing)
        }
        if let trigger, mayCheckIn(zone, trigger: trigger, context: context, memory: memory, state: state) {
            let event = checkInEvent(zone: zone, trigger: trigger, context: context)
            checkIns.append(event)
            memory.lastCheckIn = time
            if event.willCheckOut {
                memory.open = OpenCheckIn(
                    checkInId: event.checkInId, time: time, fenceId: event.fence?.id, beaconId: event.beacon?.id)
                memory.retriggerFrom = nil
            } else {
                memory.retriggerFrom = time
            }
        }

        let keep = isWorthKeeping(memory, zone: zone, time: time)
        if let existing {
            if keep { state.zones[existing] = memory } else { state.zones.remove(at: existing) }
        } else if keep {
            if state.zones.count >= DeviceState.rememberedZones { forgetOldestIdleZone(&state) }
            state.zones.append(memory)
        }
    }

    /// Rule 2's conditions for an entry to be a check-in.
    private func mayCheckIn(
        _ zone: CompiledZone, trigger: Trigger, context: FixContext, memory: ZoneMemory, state: DeviceState
    ) -> Bool {
        let time = context.time
        guard zone.enabled, memory.open == nil else { return false }
        if context.fix.mode == .restart {
            if zone.needsPreciseFix { return false }
            if case .geoline = trigger { return false }
        }
        if let from = memory.retriggerFrom, time - from < zone.minimumRetriggerTime { return false }
        if let schedule = tables.schedule(of: zone), !schedule.isActive(at: time) { return false }
        guard let conditions = tables.conditions(of: zone) else { return true }
        guard ConditionRules.speedHolds(conditions, speed: context.fix.speed),
            ConditionRules.bearingHolds(conditions.bearing, bearing: context.fix.bearing)
        else { return false }
        if let required = conditions.percentageCrossed, case .fence(let f) = trigger {
            let fence = tables.fences[Int(f)]
            let deepest = tables.interiorDepth[f] ?? 0
            let depth: Double
            if fence.kind == .circle {
                depth =
                    fence.radius
                    - Earth.distance(
                        lat1: fence.centreLat, lon1: fence.centreLon, lat2: context.fix.lat, lon2: context.fix.lon)
            } else {
                depth = tables.polygons[Int(fence.shape)].distanceToBoundary(lon: context.fix.lon, lat: context.fix.lat)
            }
            guard ConditionRules.percentageHolds(required, depth: depth, deepest: deepest) else { return false }
        }
        if let sequential = conditions.sequential {
            let earlier = state.zones.first { $0.zoneId == sequential.afterZoneId }?.lastCheckIn
            guard ConditionRules.sequentialHolds(sequential, earlierCheckIn: earlier, time: time) else { return false }
        }
        return true
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
