import Foundation
import PropertyBased
import Shared
import Testing

@testable import Geofence

/// The spatial index must find exactly what a scan of every fence finds.
@Suite struct IndexPropertyTests {
    /// Centres that stress the index: mid-latitudes, the antimeridian, near a pole, the equator.
    static let centres: [(lat: Double, lon: Double)] = [(48.85, 2.35), (-16.5, 179.99), (78.2, 15.6), (0, -0.001)]

    @Test func indexMatchesBruteForce() async {
        await propertyCheck(count: 24, input: Gen.int(in: 0...Int(Int32.max)), Gen.int(in: 0...3)) { seed, place in
            var rng = SplitMix(seed: UInt64(seed))
            let centre = Self.centres[place]
            let spread = Double.random(in: 500...30_000, using: &rng)
            let zones = RandomWorld.zones(count: 150, lat: centre.lat, lon: centre.lon, spread: spread, rng: &rng)
            let others = RandomWorld.zones(count: 50, lat: centre.lat, lon: centre.lon, spread: spread, rng: &rng)
            let engine = try! GeofenceEngine(projects: [
                ProjectZones(projectId: "p1", zones: zones), ProjectZones(projectId: "p2", zones: others),
            ])
            for _ in 0..<150 {
                let p = Earth.destination(
                    lat: centre.lat, lon: centre.lon, bearing: Double.random(in: 0..<360, using: &rng),
                    distance: Double.random(in: 0...(spread * 1.2), using: &rng))
                for mode in [FixMode.normal, .restart] {
                    let fix = Fix(projectId: "p1", deviceId: "d", timestamp: Date(), lat: p.lat, lon: p.lon, mode: mode)
                    let found = engine.areaHits(fix)
                    let expected = Self.scan(engine, lat: p.lat, lon: p.lon, mode: mode)
                    let inside = Set(found.filter { $0.kind == .inside }.map(\.reference))
                    #expect(inside == expected.inside, "seed \(seed) at \(p)")
                    let band = Set(found.filter { $0.kind == .band }.map(\.reference))
                    #expect(band == expected.band, "seed \(seed) at \(p)")
                    let near = Set(found.filter { $0.kind == .nearPolygon }.map(\.reference))
                    #expect(expected.nearPolygons.isSubset(of: near), "seed \(seed) at \(p)")
                    #expect(found.count == Set(found.map(\.reference)).count, "a fence reported twice")
                }
            }
        }
    }

    /// Every fence of project p1, tested one by one with the great-circle distance.
    static func scan(_ engine: GeofenceEngine, lat: Double, lon: Double, mode: FixMode)
        -> (inside: Set<Int32>, band: Set<Int32>, nearPolygons: Set<Int32>)
    {
        var inside = Set<Int32>(), band = Set<Int32>(), near = Set<Int32>()
        let buffer = engine.configuration.exitBuffer
        let tolerance = engine.configuration.restartTolerance
        for (i, fence) in engine.tables.fences.enumerated() where fence.project == 0 {
            let f = Int32(i)
            let d = Earth.distance(lat1: fence.centreLat, lon1: fence.centreLon, lat2: lat, lon2: lon)
            if mode == .restart {
                if d <= fence.radius + tolerance { inside.insert(f) } else if d <= fence.radius + tolerance + buffer { band.insert(f) }
            } else if fence.kind == .circle {
                if d <= fence.radius { inside.insert(f) } else if d <= fence.radius + buffer { band.insert(f) }
            } else {
                let polygon = engine.tables.polygons[Int(fence.shape)]
                if polygon.contains(lon: lon, lat: lat) {
                    inside.insert(f)
                } else if polygon.distanceToBoundary(lon: lon, lat: lat) <= buffer {
                    near.insert(f)
                }
            }
        }
        return (inside, band, near)
    }

    @Test func gridFindsEveryBoxHoldingThePoint() async {
        await propertyCheck(count: 50, input: Gen.int(in: 0...Int(Int32.max))) { seed in
            var rng = SplitMix(seed: UInt64(seed))
            var boxes: [BoundingBox] = []
            for _ in 0..<300 {
                let lon = Double.random(in: -180..<180, using: &rng)
                let lat = Double.random(in: -89...89, using: &rng)
                let span = exp(Double.random(in: log(1e-5)...log(50), using: &rng))
                boxes.append(
                    BoundingBox(
                        minLon: lon, minLat: lat, lonSpan: span, maxLat: min(90, lat + span * Double.random(in: 0.2...1, using: &rng))))
            }
            let grid = GridIndex(
                reach: boxes, tight: boxes, ids: (0..<Int32(boxes.count)).map { $0 },
                projects: [Int32](repeating: 0, count: boxes.count))
            for _ in 0..<300 {
                let target = boxes.randomElement(using: &rng)!
                let lon = Earth.wrapLongitude(target.minLon + target.lonSpan * Double.random(in: 0...1, using: &rng))
                let lat = target.minLat + (target.maxLat - target.minLat) * Double.random(in: 0...1, using: &rng)
                var found: [Int32] = []
                grid.forEachCandidate(lon: lon, lat: lat) { entry in
                    if entry.contains(lon: lon, lat: lat) { found.append(entry.id) }
                }
                let expected = Set(boxes.indices.filter { boxes[$0].contains(lon: lon, lat: lat) }.map { Int32($0) })
                #expect(expected.isSubset(of: Set(found)), "seed \(seed)")
                #expect(found.count == Set(found).count)
            }
        }
    }
}
