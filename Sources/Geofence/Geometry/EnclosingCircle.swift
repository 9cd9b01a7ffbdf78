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

    /// Welzl's algorithm in the tangent plane at the points' middle latitude, on a
    /// fixed pseudo-random order so that the same fence always yields the same circle.
    static func of(points: [(lon: Double, lat: Double)]) -> EnclosingCircle {
        guard let first = points.first else { return EnclosingCircle(lat: 0, lon: 0, radius: 0) }
        var unwrapped: [(x: Double, y: Double)] = []
        unwrapped.reserveCapacity(points.count)
        var minLat = first.lat, maxLat = first.lat
        for point in points {
            var lon = point.lon
            while lon - first.lon > 180 { lon -= 360 }
            while first.lon - lon > 180 { lon += 360 }
            unwrapped.append((lon, point.lat))
            minLat = min(minLat, point.lat)
            maxLat = max(maxLat, point.lat)
        }
        let refLat = (minLat + maxLat) / 2
        let refLon = first.lon
        let metric = PlanarMetric(lat: refLat)
        var plane = unwrapped.map { (x: ($0.x - refLon) * metric.kx, y: ($0.y - refLat) * metric.ky) }
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
        var radius = 0.0
        for point in points {
            radius = max(radius, Earth.distance(lat1: centreLat, lon1: centreLon, lat2: point.lat, lon2: point.lon))
        }
        return EnclosingCircle(lat: centreLat, lon: centreLon, radius: radius * (1 + 1e-12))
    }

    private struct Disc {
        var x: Double, y: Double, r2: Double
        func contains(_ p: (x: Double, y: Double)) -> Bool {
            let dx = p.x - x, dy = p.y - y
            return dx * dx + dy * dy <= r2 * (1 + 1e-12) + 1e-9
        }
    }

    private static func welzl(_ p: [(x: Double, y: Double)]) -> (x: Double, y: Double) {
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

    private static func twoPoint(_ a: (x: Double, y: Double), _ b: (x: Double, y: Double)) -> Disc {
        let x = (a.x + b.x) / 2, y = (a.y + b.y) / 2
        let dx = a.x - x, dy = a.y - y
        return Disc(x: x, y: y, r2: dx * dx + dy * dy)
    }

    /// The circumcircle, or the widest two-point circle when the points are collinear.
    private static func threePoint(
        _ a: (x: Double, y: Double), _ b: (x: Double, y: Double), _ c: (x: Double, y: Double)
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
