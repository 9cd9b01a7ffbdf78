import Foundation
import Shared

@testable import Geofence

/// A small deterministic generator (SplitMix64), so that a failing world can be rebuilt from its seed.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Random fences around a centre: circles and star-shaped polygons (some with holes),
/// from a few metres to many kilometres across, for checks that compare the index
/// with a scan of every fence.
enum RandomWorld {
    static func zones(
        count: Int, lat: Double, lon: Double, spread: Double, rng: inout SplitMix, idPrefix: String = "z"
    ) -> [ZoneDefinition] {
        (0..<count).map { i in
            let p = Earth.destination(
                lat: lat, lon: lon, bearing: Double.random(in: 0..<360, using: &rng),
                distance: Double.random(in: 0...spread, using: &rng))
            let size = exp(Double.random(in: log(5)...log(20_000), using: &rng))
            let geometry: GeoJSONGeometry
            var radius: Double? = nil
            if Bool.random(using: &rng) {
                geometry = .point(Position(lon: p.lon, lat: p.lat))
                radius = size
            } else {
                let vertices = Int.random(in: 3...80, using: &rng)
                var rings = [star(lat: p.lat, lon: p.lon, radius: size, vertices: vertices, rng: &rng)]
                if Int.random(in: 0..<4, using: &rng) == 0 {
                    rings.append(Array(star(lat: p.lat, lon: p.lon, radius: size * 0.2, vertices: 8, rng: &rng).reversed()))
                }
                geometry = .polygon(rings)
            }
            return ZoneDefinition(
                id: "\(idPrefix)\(i)", name: "Zone \(i)",
                fences: [FenceDefinition(id: "f\(i)", geometry: geometry, radius: radius)])
        }
    }

    /// A simple polygon: vertices at increasing angles, each at a random distance.
    static func star(lat: Double, lon: Double, radius: Double, vertices: Int, rng: inout SplitMix) -> [Position] {
        var ring: [Position] = []
        for k in 0..<vertices {
            let angle = 360 * Double(k) / Double(vertices)
            let r = radius * Double.random(in: 0.5...1, using: &rng)
            let q = Earth.destination(lat: lat, lon: lon, bearing: angle, distance: r)
            ring.append(Position(lon: q.lon, lat: q.lat))
        }
        ring.append(ring[0])
        return ring
    }

    /// A smooth, wavy outline such as a traced building or park: many short edges.
    static func wobbly(lat: Double, lon: Double, radius: Double, vertices: Int) -> [Position] {
        var ring: [Position] = []
        for k in 0..<vertices {
            let angle = 360 * Double(k) / Double(vertices)
            let r = radius * (1 + 0.15 * sin(angle * .pi / 180 * 7) + 0.05 * sin(angle * .pi / 180 * 31))
            let q = Earth.destination(lat: lat, lon: lon, bearing: angle, distance: r)
            ring.append(Position(lon: q.lon, lat: q.lat))
        }
        ring.append(ring[0])
        return ring
    }
}
