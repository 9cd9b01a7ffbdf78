import Foundation
import Shared

/// One fence as the hot path sees it: flat numbers, no strings, no optionals.
struct CompiledFence: Sendable {
    enum Kind: UInt8, Sendable { case circle, polygon, geoline }

    var kind: Kind
    var zone: Int32
    var project: Int32
    /// Index into `polygons` or `geolines`; unused for circles.
    var shape: Int32
    /// Where the fence can matter for a normal fix: its shape widened by the exit buffer.
    var box: BoundingBox
    /// The circle's centre, or for other shapes the centre of the enclosing circle.
    var centre: UnitVector
    var centreLat: Double
    var centreLon: Double
    /// The circle's radius, or the enclosing circle's.
    var radius: Double
    /// Squared chords of radius, radius + exit buffer, and the restart-mode equivalents.
    var insideChord2: Double
    var bandChord2: Double
    var restartChord2: Double
    var restartBandChord2: Double
}

/// What events tell about a fence; the geometry is rebuilt from the compiled shape.
struct FenceInfo: Sendable {
    var id: String
    var name: String
    var description: String
    var radius: Double?
    /// Kept as given only for geolines, which are few and small.
    var lineGeometry: GeoJSONGeometry?
}

/// One zone as the rules see it; a class, so that the hot path reads it in place.
final class CompiledZone: @unchecked Sendable {
    let summary: ZoneSummary
    let project: Int32
    let enabled: Bool
    let checkOutEnabled: Bool
    let minimumRetriggerTime: Double
    let conditions: ZoneConditions?
    let needsPreciseFix: Bool
    let schedule: CompiledSchedule?
    let fences: [Int32]
    let beacons: [Int32]
    /// How long the zone's memory of a device must be kept after the device left:
    /// the MRT, and the longest sequential window of any zone that follows this one.
    /// Set once while the zones are compiled, never after.
    var retention: Double

    init(
        summary: ZoneSummary, project: Int32, enabled: Bool, checkOutEnabled: Bool, minimumRetriggerTime: Double,
        conditions: ZoneConditions?, needsPreciseFix: Bool, schedule: CompiledSchedule?, fences: [Int32],
        beacons: [Int32], retention: Double
    ) {
        self.summary = summary
        self.project = project
        self.enabled = enabled
        self.checkOutEnabled = checkOutEnabled
        self.minimumRetriggerTime = minimumRetriggerTime
        self.conditions = conditions
        self.needsPreciseFix = needsPreciseFix
        self.schedule = schedule
        self.fences = fences
        self.beacons = beacons
        self.retention = retention
    }
}

/// One beacon of one zone.
struct CompiledBeacon: Sendable {
    var zone: Int32
    var summary: BeaconSummary
    var rssiThreshold: Int

    func matches(_ sighting: BeaconSighting) -> Bool {
        guard sighting.rssi >= rssiThreshold else { return false }
        if let id = summary.eddystoneId {
            return sighting.eddystoneId == id
        }
        guard let uuid = summary.uuid, sighting.uuid == uuid else { return false }
        if let major = summary.major, sighting.major != major { return false }
        if let minor = summary.minor, sighting.minor != minor { return false }
        return true
    }
}

/// Beacons are found by project and identifier (iBeacon uuid or Eddystone id).
struct BeaconKey: Hashable, Sendable {
    var project: Int32
    var identifier: String
}

/// Everything derived from the zone definitions, built once per zones change.
struct CompiledZones: Sendable {
    var projects: [String: Int32] = [:]
    var projectIds: [String] = []
    var zoneIndex: [[String: Int32]] = []
    var zones: [CompiledZone] = []
    var fences: [CompiledFence] = []
    var fenceInfos: [FenceInfo] = []
    var polygons: [PolygonShape] = []
    var geolines: [GeolineShape] = []
    /// Depth of the deepest interior point, for fences of zones with a percentage condition.
    var interiorDepth: [Int32: Double] = [:]
    var geolinesByProject: [[Int32]] = []
    var beacons: [CompiledBeacon] = []
    var beaconsByKey: [BeaconKey: [Int32]] = [:]

    init() {}

    init(projects input: [ProjectZones], configuration: EngineConfiguration) {
        // Shapes, enclosing circles and depths are independent per fence: prepare them on
        // every core, then assemble the tables in order.
        let all = input.flatMap { $0.zones }
        let prepared = ParallelMap.map(count: all.count) { z in
            all[z].fences.map {
                Self.prepare($0, needsDepth: all[z].conditions?.percentageCrossed != nil, configuration: configuration)
            }
        }
        var next = 0
        for project in input {
            let p: Int32
            if let existing = projects[project.projectId] {
                p = existing
            } else {
                p = Int32(projectIds.count)
                projects[project.projectId] = p
                projectIds.append(project.projectId)
                zoneIndex.append([:])
                geolinesByProject.append([])
            }
            for zone in project.zones {
                add(zone, prepared: prepared[next], project: p)
                next += 1
            }
        }
        // A zone's memory must outlive the longest window in which another zone asks for it.
        for z in zones.indices {
            guard let sequential = zones[z].conditions?.sequential,
                let after = zoneIndex[Int(zones[z].project)][sequential.afterZoneId]
            else { continue }
            zones[Int(after)].retention = max(zones[Int(after)].retention, sequential.withinSeconds)
        }
    }

    private mutating func add(_ zone: ZoneDefinition, prepared: [PreparedFence], project: Int32) {
        let z = Int32(zones.count)
        zoneIndex[Int(project)][zone.id] = z
        var fenceIndices: [Int32] = []
        for (fence, ready) in zip(zone.fences, prepared) {
            let f = Int32(fences.count)
            var compiled = ready.fence
            compiled.zone = z
            compiled.project = project
            if let polygon = ready.polygon {
                compiled.shape = Int32(polygons.count)
                polygons.append(polygon)
            }
            if let line = ready.geoline {
                compiled.shape = Int32(geolines.count)
                geolines.append(line)
                geolinesByProject[Int(project)].append(f)
            }
            if let depth = ready.depth { interiorDepth[f] = depth }
            fences.append(compiled)
            var lineGeometry: GeoJSONGeometry? = nil
            if case .lineString = fence.geometry { lineGeometry = fence.geometry }
            fenceInfos.append(
                FenceInfo(
                    id: fence.id, name: fence.name, description: fence.description, radius: fence.radius,
                    lineGeometry: lineGeometry))
            fenceIndices.append(f)
        }
        var beaconIndices: [Int32] = []
        for beacon in zone.beacons {
            let b = Int32(beacons.count)
            beacons.append(CompiledBeacon(zone: z, summary: BeaconSummary(beacon), rssiThreshold: beacon.rssiThreshold))
            for identifier in [beacon.eddystoneId ?? beacon.uuid].compactMap({ $0 }) {
                beaconsByKey[BeaconKey(project: project, identifier: identifier), default: []].append(b)
            }
            beaconIndices.append(b)
        }
        zones.append(
            CompiledZone(
                summary: ZoneSummary(zone), project: project, enabled: zone.enabled,
                checkOutEnabled: zone.checkOutEnabled, minimumRetriggerTime: max(0, zone.minimumRetriggerTime),
                conditions: zone.conditions, needsPreciseFix: zone.conditions?.needsPreciseFix ?? false,
                schedule: zone.activeSchedule.flatMap(CompiledSchedule.init), fences: fenceIndices,
                beacons: beaconIndices, retention: max(0, zone.minimumRetriggerTime)))
    }

    /// A fence compiled on its own, before it gets its place in the tables.
    struct PreparedFence: Sendable {
        var fence: CompiledFence
        var polygon: PolygonShape?
        var geoline: GeolineShape?
        var depth: Double?
    }

    static func prepare(_ fence: FenceDefinition, needsDepth: Bool, configuration: EngineConfiguration) -> PreparedFence {
        let buffer = max(0, configuration.exitBuffer)
        let tolerance = max(0, configuration.restartTolerance)
        func circle(_ kind: CompiledFence.Kind, _ box: BoundingBox, _ lat: Double, _ lon: Double, _ radius: Double)
            -> CompiledFence
        {
            CompiledFence(
                kind: kind, zone: -1, project: -1, shape: -1, box: box,
                centre: UnitVector(lat: lat, lon: lon), centreLat: lat, centreLon: lon, radius: radius,
                insideChord2: UnitVector.chordSquared(ofDistance: radius),
                bandChord2: UnitVector.chordSquared(ofDistance: radius + buffer),
                restartChord2: UnitVector.chordSquared(ofDistance: radius + tolerance),
                restartBandChord2: UnitVector.chordSquared(ofDistance: radius + tolerance + buffer))
        }
        func polygon(_ shape: PolygonShape) -> PreparedFence {
            let mec = EnclosingCircle.of(points: shape.positions)
            let compiled = circle(.polygon, shape.boundingBox.expanded(byMetres: buffer), mec.lat, mec.lon, mec.radius)
            return PreparedFence(
                fence: compiled, polygon: shape, depth: needsDepth ? InteriorDepth.deepest(of: shape) : nil)
        }
        switch fence.geometry {
        case .point(let centre):
            let radius = fence.radius ?? 0
            let box = BoundingBox.around(lat: centre.lat, lon: centre.lon, radius: radius + buffer)
            return PreparedFence(
                fence: circle(.circle, box, centre.lat, centre.lon, radius), depth: needsDepth ? radius : nil)
        case .polygon(let rings):
            return polygon(PolygonShape(rings: rings))
        case .multiPolygon(let parts):
            return polygon(PolygonShape(rings: parts.flatMap { $0 }, partRingCounts: parts.map(\.count)))
        case .lineString(let positions):
            let line = GeolineShape(positions: positions)
            let mec = EnclosingCircle.of(points: positions.map { ($0.lon, $0.lat) })
            return PreparedFence(fence: circle(.geoline, line.box, mec.lat, mec.lon, mec.radius), geoline: line)
        }
    }

    /// The fence as events describe it.
    func fenceSummary(_ f: Int32) -> FenceSummary {
        let info = fenceInfos[Int(f)]
        let fence = fences[Int(f)]
        let geometry: GeoJSONGeometry
        switch fence.kind {
        case .circle: geometry = .point(Position(lon: fence.centreLon, lat: fence.centreLat))
        case .polygon: geometry = polygons[Int(fence.shape)].geometry
        case .geoline: geometry = info.lineGeometry ?? .lineString([])
        }
        return FenceSummary(
            id: info.id, name: info.name, description: info.description, geometry: geometry, radius: info.radius)
    }

    /// The box in which a fence can matter for any fix, normal or restart mode.
    func reach(of fence: CompiledFence, configuration: EngineConfiguration) -> BoundingBox {
        if fence.kind == .geoline { return fence.box }
        let restart = BoundingBox.around(
            lat: fence.centreLat, lon: fence.centreLon,
            radius: fence.radius + max(0, configuration.restartTolerance) + max(0, configuration.exitBuffer))
        return fence.box.union(restart)
    }
}
