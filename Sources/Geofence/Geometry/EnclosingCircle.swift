import Foundation

/// The minimum enclosing circle of a fence, the shape every fence takes for a
/// restart-mode fix (iOS reports such fixes from coarse sources, so the engine
/// answers the coarse question "near this fence?").
struct EnclosingCircle: Sendable, Equatable {
    var lat: Double
    var lon: Double
    /// Great-circle metres from the centre to the farthest vertex: the circle encloses
    /// every vertex on the sphere even though it was found in a plane.
    var radius: Double

    /// A point in the tangent plane, with the index of the vertex it came from.
    struct PlanePoint {
        var x: Double
        var y: Double
        var vertex: Int
    }

    /// Welzl's algorithm in the tangent plane at the points' middle latitude, on a
    /// fixed pseudo-random order so that the same fence always yields the same circle.
    /// `lons` may be unwrapped (continuous across the antimeridian); `scratch` is
    /// working memory the caller keeps from one fence to the next.
    static func of(
        lons: UnsafeBufferPointer<Double>, lats: UnsafeBufferPointer<Double>, scratch: inout [PlanePoint]
    ) -> EnclosingCircle {
        guard let firstLon = lons.first else { return EnclosingCircle(lat: 0, lon: 0, radius: 0) }
        func unwrapped(_ i: Int) -> Double {
            var lon = lons[i]
            while lon - firstLon > 180 { lon -= 360 }
            while firstLon - lon > 180 { lon += 360 }
            return lon
        }
        var minLat = lats[0], maxLat = lats[0]
        for lat in lats {
            minLat = min(minLat, lat)
            maxLat = max(maxLat, lat)
        }
        let refLat = (minLat + maxLat) / 2
        let refLon = firstLon
        let metric = PlanarMetric(lat: refLat)
        scratch.removeAll(keepingCapacity: true)
        for i in lons.indices {
            scratch.append(PlanePoint(x: (unwrapped(i) - refLon) * metric.kx, y: (lats[i] - refLat) * metric.ky, vertex: i))
        }
        return scratch.withUnsafeMutableBufferPointer { plane in
            var seed: UInt64 = 0x9E37_79B9_7F4A_7C15
            if plane.count > 1 {
                for i in stride(from: plane.count - 1, to: 0, by: -1) {
                    seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                    plane.swapAt(i, Int((seed >> 33) % UInt64(i + 1)))
                }
            }
            let circle = welzl(plane)
            let centreLat = refLat + circle.y / metric.ky
            let centreLon = Earth.wrapLongitude(refLon + (metric.kx > 0 ? circle.x / metric.kx : 0))
            // The great-circle radius is the distance to the farthest vertex. Planar
            // distances differ from great-circle ones by less than `relativeError`, so only
            // vertices that come that close to the farthest in the plane can be the
            // farthest on the sphere: the exact (trigonometric) distance is worked out
            // for those alone, which is what makes large fence sets quick to load.
            var farthest2 = 0.0
            for p in plane {
                let dx = p.x - circle.x, dy = p.y - circle.y
                farthest2 = max(farthest2, dx * dx + dy * dy)
            }
            let error = relativeError(extent: 2 * farthest2.squareRoot(), maxAbsLat: max(abs(minLat), abs(maxLat)))
            let candidate2 = error < 0.05 ? farthest2 * ((1 - error) / (1 + error)) * ((1 - error) / (1 + error)) : 0
            var radius = 0.0
            for p in plane {
                let dx = p.x - circle.x, dy = p.y - circle.y
                guard dx * dx + dy * dy >= candidate2 else { continue }
                radius = max(
                    radius, Earth.distance(lat1: centreLat, lon1: centreLon, lat2: lats[p.vertex], lon2: lons[p.vertex]))
            }
            return EnclosingCircle(lat: centreLat, lon: centreLon, radius: radius * (1 + 1e-12))
        }
    }

    /// A bound, four times generous, on how far a planar length differs relatively from
    /// the great-circle one within `extent` metres of the reference latitude (see
    /// `PlanarMetric`); infinite near the poles, where every vertex is measured exactly.
    static func relativeError(extent: Double, maxAbsLat: Double) -> Double {
        guard maxAbsLat < 85 else { return .infinity }
        return 4 * (extent / Earth.radius) * (abs(tan(Earth.radians(maxAbsLat))) + 1) + 1e-9
    }

    private struct Disc {
        var x: Double, y: Double, r2: Double
        func contains(_ p: PlanePoint) -> Bool {
            let dx = p.x - x, dy = p.y - y
            return dx * dx + dy * dy <= r2 * (1 + 1e-12) + 1e-9
        }
    }

    private static func welzl(_ p: UnsafeMutableBufferPointer<PlanePoint>) -> (x: Double, y: Double) {
        var disc = Disc(x: p[0].x, y: p[0].y, r2: 0)
        for i in 1..<max(1, p.count) where !disc.contains(p[i]) {
            disc = Disc(x: p[i].x, y: p[i].y, r2: 0)
            for j in 0..<i where !disc.contains(p[j]) {
                disc = twoPoint(p[i], p[j])
                for k in 0..<j where !disc.contains(p[k]) {
                    disc = threePoint(p[i], p[j], p[k]) ?? disc
                }
            }
        }
        return (disc.x, disc.y)
    }

    private static func twoPoint(_ a: PlanePoint, _ b: PlanePoint) -> Disc {
        let x = (a.x + b.x) / 2, y = (a.y + b.y) / 2
        let dx = a.x - x, dy = a.y - y
        return Disc(x: x, y: y, r2: dx * dx + dy * dy)
    }

    /// The circumcircle, or the widest two-point circle when the points are collinear.
    private static func threePoint(
        _ a: PlanePoint, _ b: PlanePoint, _ c: PlanePoint
    ) -> Disc? {
        let bx = b.x - a.x, by = b.y - a.y, cx = c.x - a.x, cy = c.y - a.y
        let d = 2 * (bx * cy - by * cx)
        guard d != 0 else {
            let candidates = [twoPoint(a, b), twoPoint(a, c), twoPoint(b, c)]
            return candidates.max { $0.r2 < $1.r2 }
        }
        let b2 = bx * bx + by * by, c2 = cx * cx + cy * cy
        let ux = (cy * b2 - by * c2) / d
        let uy = (bx * c2 - cx * b2) / d
        return Disc(x: a.x + ux, y: a.y + uy, r2: ux * ux + uy * uy)
    }
}
