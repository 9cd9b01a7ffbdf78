import Foundation
import Shared

/// One reason a fix concerns a zone: it is in or near one of its fences, it crossed
/// one of its geolines, or it heard one of its beacons.
struct Hit: Sendable {
    enum Kind: UInt8, Sendable, Comparable {
        /// Inside the fence (or, in restart mode, its widened enclosing circle).
        case inside
        /// Outside, but within the exit buffer.
        case band
        /// Outside a polygon but within its box: whether it is in the band is worked
        /// out only if the device is inside the zone, because only then it matters.
        case nearPolygon
        case crossing
        case beacon
        /// One of the zone's beacons heard under its threshold: the reference is the index
        /// in the fix's weak sightings.
        case weakBeacon

        static func < (a: Kind, b: Kind) -> Bool { a.rawValue < b.rawValue }
    }

    var zone: Int32
    var kind: Kind
    /// The fence, or the beacon, or for a crossing the index in the crossings list.
    var reference: Int32

    func precedes(_ other: Hit) -> Bool {
        if zone != other.zone { return zone < other.zone }
        if kind != other.kind { return kind < other.kind }
        return reference < other.reference
    }
}

/// A geoline crossed by the device's path.
struct Crossing {
    var crossing: GeolineCrossing
    var fence: Int32
}

/// Hits of one fix, in stack memory while they fit (they nearly always do) so that
/// evaluating a fix allocates nothing on the common path.
struct HitList {
    let buffer: UnsafeMutableBufferPointer<Hit>
    var overflow: [Hit] = []
    private(set) var count = 0

    init(buffer: UnsafeMutableBufferPointer<Hit>) {
        self.buffer = buffer
    }

    mutating func append(_ hit: Hit) {
        if count < buffer.count {
            buffer[count] = hit
        } else {
            if overflow.isEmpty { overflow = Array(buffer) }
            overflow.append(hit)
        }
        count += 1
    }

    subscript(index: Int) -> Hit {
        count <= buffer.count ? buffer[index] : overflow[index]
    }

    /// Sorts by zone, then kind, then fence: the order in which decisions are made.
    mutating func sort() {
        if count <= buffer.count {
            // Insertion sort: the lists are a handful of entries.
            for i in 1..<max(1, count) {
                let hit = buffer[i]
                var j = i - 1
                while j >= 0, hit.precedes(buffer[j]) {
                    buffer[j + 1] = buffer[j]
                    j -= 1
                }
                buffer[j + 1] = hit
            }
        } else {
            overflow.sort { $0.precedes($1) }
        }
    }
}

extension GeofenceEngine {
    /// Fences the fix is in or near, from the spatial index.
    func collectAreaHits(_ context: FixContext, into hits: inout HitList) {
        let lat = context.fix.lat
        let lon = Earth.wrapLongitude(context.fix.lon)
        // The unit vector costs four trigonometric calls: only worked out if a circle needs it.
        var point: UnitVector? = nil
        let restart = context.fix.mode == .restart
        let project = context.project
        let buffer = configuration.exitBuffer
        let tolerance = max(0, configuration.restartTolerance)
        let fences = tables.fences
        areaIndex.forEachCandidate(lon: lon, lat: lat) { entry in
            guard entry.project == project else { return }
            if restart {
                let fence = fences[Int(entry.id)]
                let p = point ?? UnitVector(lat: lat, lon: lon)
                point = p
                let c2 = p.chordSquared(to: fence.centre)
                if c2 <= UnitVector.chordSquared(ofDistance: fence.radius + tolerance) {
                    hits.append(Hit(zone: fence.zone, kind: .inside, reference: entry.id))
                } else if c2 <= UnitVector.chordSquared(ofDistance: fence.radius + tolerance + max(0, buffer)) {
                    hits.append(Hit(zone: fence.zone, kind: .band, reference: entry.id))
                }
                return
            }
            guard entry.contains(lon: lon, lat: lat) else { return }
            let fence = fences[Int(entry.id)]
            switch fence.kind {
            case .circle:
                let p = point ?? UnitVector(lat: lat, lon: lon)
                point = p
                let c2 = p.chordSquared(to: fence.centre)
                if within(c2, chord2: fence.insideChord2, lat: lat, lon: lon, fence: fence, metres: fence.radius) {
                    hits.append(Hit(zone: fence.zone, kind: .inside, reference: entry.id))
                } else if within(
                    c2, chord2: fence.bandChord2, lat: lat, lon: lon, fence: fence, metres: fence.radius + buffer)
                {
                    hits.append(Hit(zone: fence.zone, kind: .band, reference: entry.id))
                }
            case .polygon:
                // The entry's box is the polygon's, widened by the exit buffer.
                let inside = tables.polygons.contains(Int(fence.shape), lon: lon, lat: lat)
                hits.append(Hit(zone: fence.zone, kind: inside ? .inside : .nearPolygon, reference: entry.id))
            case .geoline:
                break
            }
        }
    }

    /// Chord comparison, with the exact great-circle distance deciding the rare
    /// cases within rounding of the boundary, so "exactly on the radius" is inside.
    @inline(__always)
    func within(_ c2: Double, chord2: Double, lat: Double, lon: Double, fence: CompiledFence, metres: Double) -> Bool {
        let margin = chord2 * 1e-9
        if c2 < chord2 - margin { return true }
        if c2 > chord2 + margin { return false }
        return Earth.distance(lat1: fence.centreLat, lon1: fence.centreLon, lat2: lat, lon2: lon) <= metres
    }

    /// Geolines crossed by the path from the previous usable fix to this one.
    func collectCrossings(
        _ context: FixContext, from track: TrackPoint, into hits: inout HitList, crossings: inout [Crossing]
    ) {
        let fix = context.fix
        let startLon = Earth.wrapLongitude(track.lon)
        let endLon = Earth.wrapLongitude(fix.lon)
        var delta = endLon - startLon
        if delta > 180 { delta -= 360 } else if delta < -180 { delta += 360 }
        let box = BoundingBox(
            minLon: delta >= 0 ? startLon : endLon, minLat: min(track.lat, fix.lat), lonSpan: abs(delta),
            maxLat: max(track.lat, fix.lat))
        var seen: [Int32] = []
        func test(_ f: Int32) {
            let fence = tables.fences[Int(f)]
            guard fence.project == context.project, fence.kind == .geoline else { return }
            let line = tables.geolines[Int(fence.shape)]
            guard line.box.intersects(box), !seen.contains(f) else { return }
            seen.append(f)
            if let crossing = line.firstCrossing(fromLat: track.lat, fromLon: startLon, toLat: fix.lat, toLon: endLon) {
                hits.append(Hit(zone: fence.zone, kind: .crossing, reference: Int32(crossings.count)))
                crossings.append(Crossing(crossing: crossing, fence: f))
            }
        }
        // A long jump would touch many fine cells; the project's own list is cheaper then.
        let finest = geolineIndex.levels.last ?? 0
        let size = GridIndex.cellSize(finest)
        let cells = (box.lonSpan / size + 2) * ((box.maxLat - box.minLat) / size + 2)
        if cells > 256 {
            for f in tables.geolinesByProject[Int(context.project)] { test(f) }
        } else {
            geolineIndex.forEachCandidate(in: box) { entry in
                if entry.project == context.project { test(entry.id) }
            }
        }
    }

    /// Beacons of the project heard at or above their threshold, and those heard below it (listed
    /// in `weak`, for the decision record).
    func collectBeaconHits(_ context: FixContext, into hits: inout HitList, weak: inout [WeakSighting]) {
        for sighting in context.fix.beacons {
            guard let identifier = sighting.eddystoneId ?? sighting.uuid,
                let candidates = tables.beaconsByKey[BeaconKey(project: context.project, identifier: identifier)]
            else { continue }
            for b in candidates where tables.beacons[Int(b)].identifies(sighting) {
                if sighting.rssi >= tables.beacons[Int(b)].rssiThreshold {
                    hits.append(Hit(zone: tables.beacons[Int(b)].zone, kind: .beacon, reference: b))
                } else {
                    hits.append(Hit(zone: tables.beacons[Int(b)].zone, kind: .weakBeacon, reference: Int32(weak.count)))
                    weak.append(WeakSighting(beacon: b, rssi: sighting.rssi))
                }
            }
        }
    }
}

/// A zone's beacon heard, but under its threshold.
struct WeakSighting {
    var beacon: Int32
    var rssi: Int
}

extension GeofenceEngine {
    /// The fences a fix is in or near, as the index finds them (for checks and tools;
    /// `evaluate` does the same without allocating).
    func areaHits(_ fix: Fix) -> [Hit] {
        guard let project = tables.projects[fix.projectId] else { return [] }
        let context = FixContext(
            fix: fix, time: fix.timestamp.timeIntervalSince1970, project: project, usable: true, located: true)
        return withUnsafeTemporaryAllocation(of: Hit.self, capacity: 64) { buffer in
            var hits = HitList(buffer: buffer)
            collectAreaHits(context, into: &hits)
            return (0..<hits.count).map { hits[$0] }
        }
    }
}
