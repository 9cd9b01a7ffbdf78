import Foundation
import Shared

/// Decides, fix by fix, check-ins and check-outs by the rules of docs/evaluation-rules.md.
///
/// Immutable: built from the zones of every project (off the hot path, since it
/// validates and indexes them) and swapped in whole by the caller when zones
/// change. Everything that changes per device lives in the caller's `DeviceState`,
/// so one engine serves any number of threads. Pure and deterministic: decisions
/// depend on the fixes' timestamps only, never on the clock, except for
/// `checkOutStale`, which is handed `now`.
public final class GeofenceEngine: Sendable {
    public let configuration: EngineConfiguration
    let tables: CompiledZones
    let areaIndex: GridIndex
    let geolineIndex: GridIndex

    /// Validates and indexes the zones; throws `ZoneValidationError` naming every problem.
    public init(projects: [ProjectZones], configuration: EngineConfiguration = .init()) throws {
        var problems: [ZoneProblem] = []
        var zoneIds: [ZoneIds] = []
        for project in projects {
            let ids = ZoneIds(project.zones)
            for var problem in ZoneValidator.validate(project.zones, ids: ids) {
                problem.projectId = project.projectId
                problems.append(problem)
            }
            zoneIds.append(ids)
        }
        guard problems.isEmpty else { throw ZoneValidationError(problems: problems) }
        self.configuration = configuration
        let tables = CompiledZones(projects: projects, zoneIds: zoneIds, configuration: configuration)
        self.tables = tables
        var areaFences: [Int32] = [], lineFences: [Int32] = []
        areaFences.reserveCapacity(tables.fences.count)
        for (f, fence) in tables.fences.enumerated() {
            if fence.kind == .geoline { lineFences.append(Int32(f)) } else { areaFences.append(Int32(f)) }
        }
        areaIndex = GridIndex(count: areaFences.count) { i in
            let f = areaFences[i]
            let fence = tables.fences[Int(f)]
            let box = tables.box(of: fence, configuration: configuration)
            let reach = tables.reach(of: fence, box: box, configuration: configuration)
            return (reach, GridIndex.Entry(id: f, project: fence.project, box: box))
        }
        geolineIndex = GridIndex(count: lineFences.count) { i in
            let f = lineFences[i]
            let fence = tables.fences[Int(f)]
            let box = tables.box(of: fence, configuration: configuration)
            return (box, GridIndex.Entry(id: f, project: fence.project, box: box))
        }
    }

    /// Number of fences (of every kind) across all projects.
    public var fenceCount: Int { tables.fences.count }

    /// Evaluates one fix against the fix's project's zones, updating the device's state.
    public func evaluate(_ fix: Fix, state: inout DeviceState) -> Evaluation {
        let time = fix.timestamp.timeIntervalSince1970
        let digest = fix.fixId.map(DeviceState.digest(of:))
        if let digest, state.recentFixIds.contains(digest) {
            return Evaluation(outcome: .duplicate, entries: [DecisionEntry(outcome: .duplicate)])
        }
        if let last = state.lastTime, time < last {
            var detail = DecisionDetail()
            detail.lastFixAt = Date(timeIntervalSince1970: last)
            return Evaluation(outcome: .late, entries: [DecisionEntry(outcome: .late, detail: detail)])
        }
        if let digest { state.remember(fixId: digest) }
        defer {
            state.lastTime = time
            state.lastFix = FixMemory(fix)
        }
        guard let project = tables.projects[fix.projectId] else {
            // The project has no zones (any more): nothing to remember about them.
            state.zones.removeAll()
            return Evaluation(outcome: .evaluated)
        }
        var events: [CheckEvent] = []
        var entries: [DecisionEntry] = []
        if let last = state.lastTime, time - last >= configuration.staleAfter {
            expire(
                &state, project: project, deviceId: fix.deviceId, at: last + configuration.staleAfter, events: &events,
                entries: &entries)
        }
        let located = fix.lat.isFinite && fix.lon.isFinite && abs(fix.lat) <= 90
        let usable = located && (fix.accuracy ?? 0) <= configuration.maxAccuracy
        var context = FixContext(fix: fix, time: time, project: project, usable: usable, located: located)
        withUnsafeTemporaryAllocation(of: Hit.self, capacity: 64) { buffer in
            var hits = HitList(buffer: buffer)
            // An inaccurate fix's hits change nothing, but tell what it would have done.
            if located { collectAreaHits(context, into: &hits) }
            var crossings: [Crossing] = []
            if located, let track = state.track, !tables.geolinesByProject[Int(project)].isEmpty {
                // A path is a crossing only within the gap; an inaccurate or restart-mode fix
                // would have crossed, but does not count (docs/evaluation-rules.md#geoline-crossings).
                let gap = time - track.time
                if gap > configuration.maxCrossingGap {
                    context.crossingRefusal = .crossingGapTooLong
                    context.crossingGap = gap
                } else if !usable {
                    context.crossingRefusal = .accuracyTooLow
                } else if fix.mode == .restart {
                    context.crossingRefusal = .crossingRestartMode
                }
                collectCrossings(context, from: track, into: &hits, crossings: &crossings)
            }
            var weakSightings: [WeakSighting] = []
            if !fix.beacons.isEmpty { collectBeaconHits(context, into: &hits, weak: &weakSightings) }
            if hits.count > 0 || !state.zones.isEmpty {
                decide(
                    context, hits: &hits, crossings: crossings, weakSightings: weakSightings, state: &state, events: &events,
                    entries: &entries)
            }
        }
        if usable { state.track = TrackPoint(time: time, lat: fix.lat, lon: fix.lon) }
        state.number(&events)
        return Evaluation(outcome: .evaluated, events: events, entries: entries)
    }

    /// When `checkOutStale` would next have something to do for this state (nil: nothing open).
    public func staleDeadline(of state: DeviceState) -> Date? {
        guard let last = state.lastTime, state.zones.contains(where: { $0.open != nil }) else { return nil }
        return Date(timeIntervalSince1970: last + configuration.staleAfter)
    }

    /// Closes, with reason `timeout`, the check-ins of a device silent for `staleAfter`.
    ///
    /// The check-out is dated at the deadline (last fix + `staleAfter`), not at `now`,
    /// and carries the last fix's location: the result, ids included, is the same
    /// whenever the sweep runs, and the same as when the device's next fix arrives
    /// first and `evaluate` closes them itself.
    public func checkOutStale(state: inout DeviceState, projectId: String, deviceId: String, now: Date) -> [CheckEvent] {
        guard let deadline = staleDeadline(of: state), now >= deadline else { return [] }
        guard let project = tables.projects[projectId] else {
            state.zones.removeAll()
            return []
        }
        var events: [CheckEvent] = []
        var entries: [DecisionEntry] = []
        expire(
            &state, project: project, deviceId: deviceId, at: deadline.timeIntervalSince1970, events: &events,
            entries: &entries)
        state.number(&events)
        return events
    }

    /// The device is taken as gone at `deadline`: open check-ins close with reason
    /// `timeout` and every presence ends, so its next fix inside a zone is a new visit.
    /// The check-outs come in the order zones are decided, not in the order the state
    /// happens to remember them.
    func expire(
        _ state: inout DeviceState, project: Int32, deviceId: String, at deadline: Double, events: inout [CheckEvent],
        entries: inout [DecisionEntry]
    ) {
        let location = state.lastFix?.location ?? EventLocation(timestamp: Date(timeIntervalSince1970: deadline), lat: 0, lon: 0)
        var kept: [ZoneMemory] = []
        var closed: [(zone: Int32, event: CheckEvent, entry: DecisionEntry)] = []
        for var memory in state.zones {
            guard let z = tables.zoneIndex[Int(project)][memory.zoneId] else { continue }
            let zone = tables.zones[Int(z)]
            if let open = memory.open {
                let event = checkOutEvent(
                    zone: zone, open: open, projectId: tables.projectIds[Int(project)], deviceId: deviceId,
                    time: deadline, location: location, mode: .normal, fixId: nil, reason: .timeout)
                var detail = DecisionDetail()
                detail.reason = CheckOutReason.timeout.rawValue
                detail.checkInId = open.checkInId
                closed.append(
                    (z, event, DecisionEntry(zoneId: memory.zoneId, fenceId: open.fenceId, outcome: .checkedOut, detail: detail)))
                memory.open = nil
                memory.retriggerFrom = deadline
            }
            memory.fenceInside = false
            memory.beaconSeen = nil
            if isWorthKeeping(memory, zone: zone, time: deadline) { kept.append(memory) }
        }
        closed.sort { decidesBefore($0.zone, $1.zone) }
        events.append(contentsOf: closed.map(\.event))
        entries.append(contentsOf: closed.map(\.entry))
        state.zones = kept
    }

    func isWorthKeeping(_ memory: ZoneMemory, zone: CompiledZone, time: Double) -> Bool {
        if memory.isPresent || memory.open != nil { return true }
        if let last = memory.lastCheckIn, time - last <= zone.retention { return true }
        if let from = memory.retriggerFrom, time - from < zone.minimumRetriggerTime { return true }
        return false
    }
}

/// What every rule needs to know about the fix being evaluated.
struct FixContext {
    var fix: Fix
    var time: Double
    var project: Int32
    /// Accurate enough to enter or leave fences.
    var usable: Bool
    /// A position on the globe (what an inaccurate fix would have done can be told).
    var located: Bool
    /// Why the fix's geoline crossings do not count (nil: they do).
    var crossingRefusal: DecisionReason? = nil
    /// Seconds since the previous fix accurate enough to count, when longer than a crossing allows.
    var crossingGap: Double? = nil
}
