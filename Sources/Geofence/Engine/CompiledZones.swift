import Foundation
import Shared

/// One fence as the hot path sees it: flat numbers, no strings, no optionals.
struct CompiledFence: BitwiseCopyable, Sendable {
    enum Kind: UInt8, Sendable { case circle, polygon, geoline }

    var kind: Kind
    var zone: Int32
    var project: Int32
    /// Index into `polygons` or `geolines`; unused for circles.
    var shape: Int32
    /// The circle's centre, or for other shapes the centre of the enclosing circle.
    var centre: UnitVector
    var centreLat: Double
    var centreLon: Double
    /// The circle's radius, or the enclosing circle's.
    var radius: Double
    /// Squared chords of radius and radius + exit buffer. (Restart-mode fixes are rare
    /// enough to work theirs out when they come.)
    var insideChord2: Double
    var bandChord2: Double
}

/// What events tell about a fence besides its geometry.
struct FenceInfo: Sendable {
    var id: String
    var name: String
    var description: String
}

/// One zone as the rules see it. What only some zones have (conditions, schedules)
/// lives in `CompiledZones.rules`, so that a million plain zones stay small.
struct CompiledZone: Sendable {
    var summary: ZoneSummary
    var project: Int32
    var enabled: Bool
    var checkOutEnabled: Bool
    var needsPreciseFix: Bool
    var minimumRetriggerTime: Double
    /// How long the zone's memory of a device must be kept after the device left:
    /// the MRT, and the longest sequential window of any zone that follows this one.
    var retention: Double
    var fences: Range<Int32>
    var beacons: Range<Int32>
    /// How many zones the chain of sequential conditions from this one runs through
    /// (0: none): a fix decides a zone after those it follows (`SequentialOrder`).
    var sequentialDepth: Int32 = 0
    /// Index into `CompiledZones.rules`, or -1 when the zone has no conditions and no schedule.
    var rules: Int32
}

/// A zone's conditions and active schedule.
struct ZoneRules: Sendable {
    var conditions: ZoneConditions?
    var schedule: CompiledSchedule?
}

/// One beacon of one zone.
struct CompiledBeacon: Sendable {
    var zone: Int32
    var summary: BeaconSummary
    var rssiThreshold: Int

    /// The sighting is of this beacon, whatever its signal strength.
    func identifies(_ sighting: BeaconSighting) -> Bool {
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
    var rules: [ZoneRules] = []
    var fences: FixedBuffer<CompiledFence>
    var fenceInfos: [FenceInfo] = []
    /// Radii given on fences other than circles (they mean nothing there, but events
    /// repeat the fence as it was given).
    var otherRadii: [Int32: Double] = [:]
    var polygons: PolygonStore
    var geolines: [GeolineShape] = []
    /// Depth of the deepest interior point, for fences of zones with a percentage condition.
    var interiorDepth: [Int32: Double] = [:]
    var geolinesByProject: [[Int32]] = []
    var beacons: [CompiledBeacon] = []
    var beaconsByKey: [BeaconKey: [Int32]] = [:]

    func conditions(of zone: CompiledZone) -> ZoneConditions? {
        zone.rules < 0 ? nil : rules[Int(zone.rules)].conditions
    }

    func schedule(of zone: CompiledZone) -> CompiledSchedule? {
        zone.rules < 0 ? nil : rules[Int(zone.rules)].schedule
    }

    /// Compiles validated zones in two passes: a cheap one in document order that
    /// numbers every zone, fence, polygon and beacon and lays out the polygon store,
    /// then one on every core that fills in shapes, enclosing circles and zone records
    /// in place.
    init(projects input: [ProjectZones], zoneIds: [ZoneIds], configuration: EngineConfiguration) {
        var layout = Layout()
        for (source, project) in input.enumerated() {
            // The validator's index of zones by id, moved on by the zones numbered before.
            let base = Int32(layout.sources.count)
            let ids = base == 0 ? zoneIds[source].positions : zoneIds[source].positions.mapValues { $0 + base }
            if let existing = projects[project.projectId] {
                zoneIndex[Int(existing)].merge(ids) { _, later in later }
            } else {
                projects[project.projectId] = Int32(projectIds.count)
                projectIds.append(project.projectId)
                zoneIndex.append(ids)
                geolinesByProject.append([])
            }
            let p = projects[project.projectId]!
            // By index: copying each zone definition out of the array would cost more than the layout itself.
            for z in project.zones.indices {
                layout.add(
                    project.zones[z].fences, beacons: project.zones[z].beacons,
                    source: ZoneSource(input: Int32(source), zone: Int32(z), project: p), compiledBeacons: &beacons)
            }
        }
        let polygonBuilder = PolygonStore.Builder(layout.polygons)
        let fences = FixedBuffer<CompiledFence>(count: Int(layout.fenceStarts.last ?? 0))
        var zones: [CompiledZone] = []
        var fenceInfos: [FenceInfo] = []
        var chunks: [CompiledChunk] = []
        zones = [CompiledZone](unsafeUninitializedCapacity: layout.sources.count) { zoneBuffer, zonesDone in
            fenceInfos = [FenceInfo](unsafeUninitializedCapacity: fences.count) { infoBuffer, infosDone in
                let writer = ChunkWriter(
                    input: input, layout: layout, configuration: configuration, fences: fences,
                    fenceInfos: infoBuffer, zones: zoneBuffer, polygons: polygonBuilder)
                chunks = ParallelMap.chunks(count: layout.sources.count) { writer.compile(zones: $0) }
                infosDone = fences.count
            }
            zonesDone = layout.sources.count
        }
        self.fences = fences
        polygonBuilder.layOutBandEdges()
        _ = ParallelMap.chunks(count: polygonBuilder.polygonCount) { range in
            var cursors: [Int32] = []
            for p in range { polygonBuilder.fillBandEdges(p, cursors: &cursors) }
        }
        polygons = polygonBuilder.finish(
            originalLons: Dictionary(uniqueKeysWithValues: chunks.flatMap(\.originalLons)),
            partRingCounts: Dictionary(uniqueKeysWithValues: chunks.flatMap(\.partRingCounts)))
        for chunk in chunks {
            for (f, line) in chunk.geolines {
                var fence = fences[Int(f)]
                fence.shape = Int32(geolines.count)
                fences.set(Int(f), to: fence)
                geolines.append(line)
                geolinesByProject[Int(fence.project)].append(f)
            }
            for (z, zoneRules) in chunk.rules {
                zones[Int(z)].rules = Int32(rules.count)
                rules.append(zoneRules)
            }
            for (f, radius) in chunk.otherRadii { otherRadii[f] = radius }
        }
        let depthFences = chunks.flatMap(\.needsDepth)
        let polygons = self.polygons
        let depths = ParallelMap.map(count: depthFences.count) { i in
            let fence = fences[Int(depthFences[i])]
            return fence.kind == .polygon ? InteriorDepth.deepest(of: polygons[Int(fence.shape)]) : fence.radius
        }
        interiorDepth = Dictionary(uniqueKeysWithValues: zip(depthFences, depths))
        for (b, beacon) in beacons.enumerated() {
            for identifier in [beacon.summary.eddystoneId ?? beacon.summary.uuid].compactMap({ $0 }) {
                let key = BeaconKey(project: zones[Int(beacon.zone)].project, identifier: identifier)
                beaconsByKey[key, default: []].append(Int32(b))
            }
        }
        // A zone another zone follows keeps its last check-in for as long as the device's state
        // lasts: a check-in longer ago than the window is "too long ago", never "none".
        var follows: [Int32: Int32] = [:]
        for (z, zoneRules) in chunks.lazy.flatMap(\.rules) {
            guard let sequential = zoneRules.conditions?.sequential,
                let after = zoneIndex[Int(zones[Int(z)].project)][sequential.afterZoneId]
            else { continue }
            zones[Int(after)].retention = .infinity
            follows[z] = after
        }
        for (z, depth) in SequentialOrder.depths(follows: follows) { zones[Int(z)].sequentialDepth = depth }
        self.zones = zones
        self.fenceInfos = fenceInfos
    }

    /// The fence as events describe it; a geometry too large for an event is left out.
    func fenceSummary(_ f: Int32) -> FenceSummary {
        let info = fenceInfos[Int(f)]
        let fence = fences[Int(f)]
        let limit = InputLimits.maximumEventGeometryPositions
        var geometry: GeoJSONGeometry? = nil
        var radius = otherRadii[f]
        switch fence.kind {
        case .circle:
            geometry = .point(Position(lon: fence.centreLon, lat: fence.centreLat))
            radius = fence.radius
        case .polygon:
            if polygons.positionCount(Int(fence.shape)) <= limit { geometry = polygons.geometry(Int(fence.shape)) }
        case .geoline:
            let positions = geolines[Int(fence.shape)].positions
            if positions.count <= limit { geometry = .lineString(positions) }
        }
        return FenceSummary(
            id: info.id, name: info.name, description: info.description, geometry: geometry,
            geometryOmitted: geometry == nil ? true : nil, radius: radius)
    }

    /// The box in which a fence can matter for a normal fix: its shape widened by the exit buffer.
    func box(of fence: CompiledFence, configuration: EngineConfiguration) -> BoundingBox {
        let buffer = max(0, configuration.exitBuffer)
        switch fence.kind {
        case .circle: return BoundingBox.around(lat: fence.centreLat, lon: fence.centreLon, radius: fence.radius + buffer)
        case .polygon: return polygons[Int(fence.shape)].boundingBox.expanded(byMetres: buffer)
        case .geoline: return geolines[Int(fence.shape)].box
        }
    }

    /// The box in which a fence can matter for any fix, normal or restart mode.
    func reach(of fence: CompiledFence, box: BoundingBox, configuration: EngineConfiguration) -> BoundingBox {
        if fence.kind == .geoline { return box }
        let restart = BoundingBox.around(
            lat: fence.centreLat, lon: fence.centreLon,
            radius: fence.radius + max(0, configuration.restartTolerance) + max(0, configuration.exitBuffer))
        return box.union(restart)
    }
}

/// Where a zone comes from: its place in the input, and the project it belongs to.
private struct ZoneSource {
    var input: Int32
    var zone: Int32
    var project: Int32
}

/// The numbering of the first pass: for zone z, its fences are
/// `fenceStarts[z]..<fenceStarts[z + 1]`, its polygons (in fence order) start at
/// `polygonStarts[z]`, and its beacons are `beaconStarts[z]..<beaconStarts[z + 1]`.
private struct Layout {
    var sources: [ZoneSource] = []
    var fenceStarts: [Int32] = [0]
    var polygonStarts: [Int32] = [0]
    var beaconStarts: [Int32] = [0]
    var polygons = PolygonStore.Layout()

    mutating func add(
        _ fences: [FenceDefinition], beacons: [BeaconDefinition], source: ZoneSource,
        compiledBeacons: inout [CompiledBeacon]
    ) {
        let z = Int32(sources.count)
        sources.append(source)
        for f in fences.indices {
            switch fences[f].geometry {
            case .polygon(let rings): _ = polygons.add(ringSizes: rings.lazy.map { $0.count })
            case .multiPolygon(let parts): _ = polygons.add(ringSizes: parts.lazy.flatMap { $0 }.map { $0.count })
            case .point, .lineString: break
            }
        }
        // Beacons are few: compiled here, in order.
        for beacon in beacons {
            compiledBeacons.append(
                CompiledBeacon(zone: z, summary: BeaconSummary(beacon), rssiThreshold: beacon.rssiThreshold))
        }
        fenceStarts.append(fenceStarts[Int(z)] + Int32(fences.count))
        polygonStarts.append(Int32(polygons.polygonCount))
        beaconStarts.append(Int32(compiledBeacons.count))
    }
}

/// What a range of zones hands back besides what it wrote in place.
private struct CompiledChunk {
    var originalLons: [(Int32, [Double])] = []
    var partRingCounts: [(Int32, [Int])] = []
    /// Geolines by fence; they are numbered once every range is done.
    var geolines: [(Int32, GeolineShape)] = []
    var rules: [(Int32, ZoneRules)] = []
    var otherRadii: [(Int32, Double)] = []
    /// Fences of zones with a percentage condition; their depth needs the finished store.
    var needsDepth: [Int32] = []
}

/// The second pass: compiles a range of zones, writing fences, fence infos, zones and
/// polygons at the places the first pass gave them, so ranges run on any core.
private struct ChunkWriter: @unchecked Sendable {
    let input: [ProjectZones]
    let layout: Layout
    let configuration: EngineConfiguration
    let fences: FixedBuffer<CompiledFence>
    let fenceInfos: UnsafeMutableBufferPointer<FenceInfo>
    let zones: UnsafeMutableBufferPointer<CompiledZone>
    let polygons: PolygonStore.Builder

    func compile(zones range: Range<Int>) -> CompiledChunk {
        var chunk = CompiledChunk()
        var circleScratch: [EnclosingCircle.PlanePoint] = []
        var nextPolygon = layout.polygonStarts[range.lowerBound]
        for z in range {
            let source = layout.sources[z]
            let zone = input[Int(source.input)].zones[Int(source.zone)]
            let needsDepth = zone.conditions?.percentageCrossed != nil
            var f = layout.fenceStarts[z]
            for fence in zone.fences {
                var compiled: CompiledFence
                func polygon(_ rings: [[Position]], parts: [Int]?) -> CompiledFence {
                    let p = nextPolygon
                    nextPolygon += 1
                    if let lons = polygons.fill(p, rings: rings) {
                        chunk.originalLons.append((p, lons))
                    }
                    if let parts { chunk.partRingCounts.append((p, parts)) }
                    let (xs, ys) = polygons.vertices(p)
                    let mec = EnclosingCircle.of(lons: xs, lats: ys, scratch: &circleScratch)
                    return circle(.polygon, lat: mec.lat, lon: mec.lon, radius: mec.radius, shape: p)
                }
                switch fence.geometry {
                case .point(let centre):
                    compiled = circle(.circle, lat: centre.lat, lon: centre.lon, radius: fence.radius ?? 0, shape: -1)
                case .polygon(let rings):
                    compiled = polygon(rings, parts: nil)
                case .multiPolygon(let parts):
                    compiled = polygon(parts.flatMap { $0 }, parts: parts.map(\.count))
                case .lineString(let positions):
                    let line = GeolineShape(positions: positions)
                    let mec = line.xs.withUnsafeBufferPointer { xs in
                        line.ys.withUnsafeBufferPointer { ys in EnclosingCircle.of(lons: xs, lats: ys, scratch: &circleScratch) }
                    }
                    compiled = circle(.geoline, lat: mec.lat, lon: mec.lon, radius: mec.radius, shape: -1)
                    chunk.geolines.append((f, line))
                }
                compiled.zone = Int32(z)
                compiled.project = source.project
                if needsDepth, compiled.kind != .geoline { chunk.needsDepth.append(f) }
                if compiled.kind != .circle, let radius = fence.radius { chunk.otherRadii.append((f, radius)) }
                fences.set(Int(f), to: compiled)
                (fenceInfos.baseAddress! + Int(f)).initialize(
                    to: FenceInfo(id: fence.id, name: fence.name, description: fence.description))
                f += 1
            }
            let schedule = zone.activeSchedule.flatMap(CompiledSchedule.init)
            if zone.conditions != nil || schedule != nil {
                chunk.rules.append((Int32(z), ZoneRules(conditions: zone.conditions, schedule: schedule)))
            }
            (zones.baseAddress! + z).initialize(
                to: CompiledZone(
                    summary: ZoneSummary(zone), project: source.project, enabled: zone.enabled,
                    checkOutEnabled: zone.checkOutEnabled, needsPreciseFix: zone.conditions?.needsPreciseFix ?? false,
                    minimumRetriggerTime: max(0, zone.minimumRetriggerTime), retention: max(0, zone.minimumRetriggerTime),
                    fences: layout.fenceStarts[z]..<layout.fenceStarts[z + 1],
                    beacons: layout.beaconStarts[z]..<layout.beaconStarts[z + 1], rules: -1))
        }
        return chunk
    }

    func circle(_ kind: CompiledFence.Kind, lat: Double, lon: Double, radius: Double, shape: Int32) -> CompiledFence {
        CompiledFence(
            kind: kind, zone: -1, project: -1, shape: shape, centre: UnitVector(lat: lat, lon: lon), centreLat: lat,
            centreLon: lon, radius: radius, insideChord2: UnitVector.chordSquared(ofDistance: radius),
            bandChord2: UnitVector.chordSquared(ofDistance: radius + max(0, configuration.exitBuffer)))
    }
}
