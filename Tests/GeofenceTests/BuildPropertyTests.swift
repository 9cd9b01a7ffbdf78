import Foundation
import PropertyBased
import Shared
import Testing

@testable import Geofence

/// The shortcuts that make a million fences quick to load must give what the plain
/// methods give: the bucketed sweep what comparing every pair of edges gives, the
/// enclosing radius what measuring every vertex gives, and a store built on every
/// core what a store of one polygon gives.
@Suite struct BuildPropertyTests {
    @Test func parallelMapKeepsOrderAndCoversEveryIndexOnce() {
        let count = 10 * ParallelMap.chunkSize + 17
        #expect(ParallelMap.map(count: count) { $0 * 3 } == (0..<count).map { $0 * 3 })
        let ranges = ParallelMap.chunks(count: count) { $0 }
        #expect(ranges.first?.lowerBound == 0)
        #expect(ranges.last?.upperBound == count)
        #expect(zip(ranges, ranges.dropFirst()).allSatisfy { $0.upperBound == $1.lowerBound })
        #expect(ParallelMap.chunks(count: 0) { $0 }.isEmpty)
    }

    /// Rings of random points on a coarse grid, so that crossings, touching vertices
    /// and collinear overlaps all come up, and some rings are simple.
    @Test func sweepFindsAnIntersectionExactlyWhenSomePairOfEdgesMeets() async {
        await propertyCheck(count: 300, input: Gen.int(in: 0...Int(Int32.max))) { seed in
            var rng = SplitMix(seed: UInt64(seed))
            let n = Int.random(in: 17...120, using: &rng)
            let grid = Double(Int.random(in: 4...400, using: &rng))
            let simple = Bool.random(using: &rng)
            var ring: [Position] = []
            for k in 0..<n {
                if simple {
                    // A star: simple unless rounding to the grid folds it.
                    let angle = 2 * Double.pi * Double(k) / Double(n)
                    let r = Double.random(in: 0.3...1, using: &rng)
                    ring.append(Position(lon: (r * cos(angle) * grid).rounded() / grid, lat: (r * sin(angle) * grid).rounded() / grid))
                } else {
                    ring.append(
                        Position(
                            lon: Double(Int.random(in: 0...Int(grid), using: &rng)) / grid,
                            lat: Double(Int.random(in: 0...Int(grid), using: &rng)) / grid))
                }
            }
            ring.append(ring[0])
            let segments = (0..<n).map { k in
                Segment(
                    ring: 0, index: Int32(k), last: Int32(n - 1), ax: ring[k].lon, ay: ring[k].lat, bx: ring[k + 1].lon,
                    by: ring[k + 1].lat)
            }
            var buckets: [Int32] = [], order: [Int32] = []
            let found = SelfIntersection.find(segments, buckets: &buckets, order: &order)
            var expected = false
            for i in 0..<n {
                for j in (i + 1)..<n where SelfIntersection.intersects(segments[i], segments[j]) { expected = true }
            }
            #expect((found != nil) == expected, "seed \(seed)")
            if let (a, b) = found { #expect(SelfIntersection.intersects(a, b)) }
        }
    }

    @Test func enclosingRadiusIsTheDistanceToTheFarthestVertex() async {
        await propertyCheck(count: 200, input: Gen.int(in: 0...Int(Int32.max))) { seed in
            var rng = SplitMix(seed: UInt64(seed))
            let lat = Double.random(in: -84...84, using: &rng)
            let lon = Double.random(in: -180..<180, using: &rng)
            let size = exp(Double.random(in: log(10.0)...log(200_000.0), using: &rng))
            let ring = RandomWorld.star(lat: lat, lon: lon, radius: size, vertices: Int.random(in: 3...300, using: &rng), rng: &rng)
            var lons: [Double] = []
            var previous: Double? = nil
            for position in ring {
                let x = Earth.unwrapLongitude(position.lon, after: previous)
                lons.append(x)
                previous = x
            }
            let lats = ring.map(\.lat)
            var scratch: [EnclosingCircle.PlanePoint] = []
            let circle = lons.withUnsafeBufferPointer { lons in
                lats.withUnsafeBufferPointer { lats in EnclosingCircle.of(lons: lons, lats: lats, scratch: &scratch) }
            }
            let farthest = ring.map { Earth.distance(lat1: circle.lat, lon1: circle.lon, lat2: $0.lat, lon2: $0.lon) }.max()!
            #expect(circle.radius >= farthest, "seed \(seed)")
            #expect(circle.radius <= farthest * (1 + 1e-9), "seed \(seed)")
        }
    }

    /// Enough zones that the build runs on every core, with holes, multipolygons and
    /// polygons across the antimeridian.
    @Test func storeBuiltOnEveryCoreMatchesPolygonsBuiltOneByOne() {
        var rng = SplitMix(seed: 20_261_122)
        var zones: [ZoneDefinition] = []
        var given: [GeoJSONGeometry] = []
        for i in 0..<3_000 {
            let lat = Double.random(in: -60...60, using: &rng)
            let lon = i % 5 == 0 ? 179.999 : Double.random(in: -179...179, using: &rng)
            let size = exp(Double.random(in: log(20.0)...log(5_000.0), using: &rng))
            let outline = RandomWorld.star(lat: lat, lon: lon, radius: size, vertices: Int.random(in: 3...120, using: &rng), rng: &rng)
            var rings = [outline]
            if i % 3 == 0 {
                rings.append(Array(RandomWorld.star(lat: lat, lon: lon, radius: size * 0.2, vertices: 30, rng: &rng).reversed()))
            }
            let geometry: GeoJSONGeometry
            if i % 7 == 0 {
                let other = RandomWorld.star(lat: lat + 1, lon: lon, radius: size, vertices: 40, rng: &rng)
                geometry = .multiPolygon([rings, [other]])
            } else {
                geometry = .polygon(rings)
            }
            given.append(geometry)
            zones.append(ZoneDefinition(id: "z\(i)", name: "", fences: [FenceDefinition(id: "f", geometry: geometry)]))
        }
        let engine = try! GeofenceEngine(projects: [ProjectZones(projectId: "p", zones: zones)])
        var mismatches = 0
        for (z, geometry) in given.enumerated() {
            let fence = engine.tables.fences[z]
            #expect(fence.kind == .polygon)
            #expect(engine.tables.fenceSummary(Int32(z)).geometry == geometry, "zone \(z) geometry")
            let alone: PolygonShape
            switch geometry {
            case .polygon(let rings): alone = PolygonShape(rings: rings)
            case .multiPolygon(let parts): alone = PolygonShape(rings: parts.flatMap { $0 }, partRingCounts: parts.map(\.count))
            default: continue
            }
            let shared = engine.tables.polygons[Int(fence.shape)]
            for _ in 0..<20 {
                let lon = Earth.wrapLongitude(fence.centreLon + Double.random(in: -1...1, using: &rng) * fence.radius / 50_000)
                let lat = fence.centreLat + Double.random(in: -1...1, using: &rng) * fence.radius / 100_000
                if shared.contains(lon: lon, lat: lat) != alone.contains(lon: lon, lat: lat) { mismatches += 1 }
                if shared.distanceToBoundary(lon: lon, lat: lat, limit: 30) != alone.distanceToBoundary(lon: lon, lat: lat, limit: 30) {
                    mismatches += 1
                }
            }
        }
        #expect(mismatches == 0)
    }
}
