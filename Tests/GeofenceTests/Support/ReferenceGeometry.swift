import Foundation
import Shared

/// Plain spherical and planar arithmetic for `ReferenceRules`, written again from the formulas
/// so that the reference shares no measuring code with the engine.
enum ReferenceGeometry {
    static let earthRadius = 6_371_008.8
    static let metresPerDegree = earthRadius * Double.pi / 180

    /// Great-circle distance in metres (haversine).
    static func distance(_ a: Position, _ b: Position) -> Double {
        let phi1 = a.lat * .pi / 180
        let phi2 = b.lat * .pi / 180
        let dPhi = phi2 - phi1
        let dLambda = (b.lon - a.lon) * .pi / 180
        let h = sin(dPhi / 2) * sin(dPhi / 2) + cos(phi1) * cos(phi2) * sin(dLambda / 2) * sin(dLambda / 2)
        return 2 * earthRadius * asin(min(1, h.squareRoot()))
    }

    /// The point `metres` away from `start` along `bearing` degrees.
    static func move(_ start: Position, bearing: Double, metres: Double) -> Position {
        let delta = metres / earthRadius
        let theta = bearing * .pi / 180
        let phi1 = start.lat * .pi / 180
        let lambda1 = start.lon * .pi / 180
        let phi2 = asin(sin(phi1) * cos(delta) + cos(phi1) * sin(delta) * cos(theta))
        let lambda2 = lambda1 + atan2(sin(theta) * sin(delta) * cos(phi1), cos(delta) - sin(phi1) * sin(phi2))
        return Position(lon: lambda2 * 180 / .pi, lat: phi2 * 180 / .pi)
    }

    /// Metres east and north of `origin` in the plane tangent there (the fences are small).
    static func plane(_ p: Position, around origin: Position) -> (x: Double, y: Double) {
        ((p.lon - origin.lon) * cos(origin.lat * .pi / 180) * metresPerDegree, (p.lat - origin.lat) * metresPerDegree)
    }

    static func unplane(x: Double, y: Double, around origin: Position) -> Position {
        Position(lon: origin.lon + x / (cos(origin.lat * .pi / 180) * metresPerDegree), lat: origin.lat + y / metresPerDegree)
    }

    /// Ray casting in longitude and latitude, the coordinates in which GeoJSON edges are straight.
    static func ringContains(_ ring: [Position], _ p: Position) -> Bool {
        var inside = false
        var j = ring.count - 1
        for i in 0..<ring.count {
            let a = ring[i], b = ring[j]
            if (a.lat > p.lat) != (b.lat > p.lat) {
                let lonAtLat = a.lon + (p.lat - a.lat) / (b.lat - a.lat) * (b.lon - a.lon)
                if p.lon < lonAtLat { inside.toggle() }
            }
            j = i
        }
        return inside
    }

    /// Inside the first ring of one of the parts and inside none of that part's holes.
    static func areaContains(_ parts: [[[Position]]], _ p: Position) -> Bool {
        parts.contains { rings in
            guard let outer = rings.first, ringContains(outer, p) else { return false }
            return !rings.dropFirst().contains { ringContains($0, p) }
        }
    }

    /// Metres from `p` to the nearest edge of any ring.
    static func distanceToEdges(_ parts: [[[Position]]], _ p: Position) -> Double {
        var best = Double.infinity
        for rings in parts {
            for ring in rings {
                for i in 0..<(ring.count - 1) {
                    best = min(best, distanceToSegment(p, ring[i], ring[i + 1]))
                }
            }
        }
        return best
    }

    static func distanceToSegment(_ p: Position, _ a: Position, _ b: Position) -> Double {
        let pa = plane(a, around: p), pb = plane(b, around: p)
        let ux = pb.x - pa.x, uy = pb.y - pa.y
        let length2 = ux * ux + uy * uy
        let t = length2 > 0 ? min(1, max(0, -(pa.x * ux + pa.y * uy) / length2)) : 0
        let dx = pa.x + t * ux, dy = pa.y + t * uy
        return (dx * dx + dy * dy).squareRoot()
    }

    /// Whether the path from `from` to `to` and the segment `a`–`b` cross, all straight in
    /// longitude and latitude. Touching cases are kept out of the generated trips.
    static func segmentsCross(_ from: Position, _ to: Position, _ a: Position, _ b: Position) -> Bool {
        func side(_ p: Position, _ q: Position, _ r: Position) -> Double {
            (q.lon - p.lon) * (r.lat - p.lat) - (q.lat - p.lat) * (r.lon - p.lon)
        }
        let d1 = side(a, b, from), d2 = side(a, b, to)
        let d3 = side(from, to, a), d4 = side(from, to, b)
        return (d1 > 0) != (d2 > 0) && (d3 > 0) != (d4 > 0)
    }

    /// The smallest circle holding every vertex, by trying every circle through two or three of
    /// them: slow, but fences have a handful of vertices. Its radius is measured on the sphere.
    static func enclosingCircle(_ points: [Position]) -> (centre: Position, radius: Double) {
        let origin = Position(
            lon: points.map(\.lon).reduce(0, +) / Double(points.count), lat: points.map(\.lat).reduce(0, +) / Double(points.count))
        let flat = points.map { plane($0, around: origin) }
        var best: (x: Double, y: Double, r: Double)? = nil
        func consider(_ x: Double, _ y: Double, _ r: Double) {
            guard r.isFinite, best.map({ r < $0.r }) ?? true else { return }
            let holdsAll = flat.allSatisfy { (($0.x - x) * ($0.x - x) + ($0.y - y) * ($0.y - y)).squareRoot() <= r + 1e-6 }
            if holdsAll { best = (x, y, r) }
        }
        for i in flat.indices {
            for j in flat.indices where j > i {
                let x = (flat[i].x + flat[j].x) / 2, y = (flat[i].y + flat[j].y) / 2
                consider(x, y, ((flat[i].x - x) * (flat[i].x - x) + (flat[i].y - y) * (flat[i].y - y)).squareRoot())
                for k in flat.indices where k > j {
                    let (ax, ay, bx, by, cx, cy) = (flat[i].x, flat[i].y, flat[j].x, flat[j].y, flat[k].x, flat[k].y)
                    let d = 2 * (ax * (by - cy) + bx * (cy - ay) + cx * (ay - by))
                    guard abs(d) > 1e-9 else { continue }
                    let a2 = ax * ax + ay * ay, b2 = bx * bx + by * by, c2 = cx * cx + cy * cy
                    let ux = (a2 * (by - cy) + b2 * (cy - ay) + c2 * (ay - by)) / d
                    let uy = (a2 * (cx - bx) + b2 * (ax - cx) + c2 * (bx - ax)) / d
                    consider(ux, uy, ((ax - ux) * (ax - ux) + (ay - uy) * (ay - uy)).squareRoot())
                }
            }
        }
        let circle = best ?? (flat[0].x, flat[0].y, 0)
        let centre = unplane(x: circle.x, y: circle.y, around: origin)
        return (centre, points.map { distance(centre, $0) }.max() ?? 0)
    }

    /// How deep the deepest interior point lies: the best of a grid over the area, then of finer
    /// grids around the best point found.
    static func deepestDepth(_ parts: [[[Position]]]) -> Double {
        let all = parts.flatMap { $0.flatMap { $0 } }
        var minLat = all.map(\.lat).min()!, maxLat = all.map(\.lat).max()!
        var minLon = all.map(\.lon).min()!, maxLon = all.map(\.lon).max()!
        var best = 0.0
        for _ in 0..<6 {
            var bestPoint: Position? = nil
            let steps = 40
            for i in 0...steps {
                for j in 0...steps {
                    let p = Position(
                        lon: minLon + (maxLon - minLon) * Double(i) / Double(steps),
                        lat: minLat + (maxLat - minLat) * Double(j) / Double(steps))
                    guard areaContains(parts, p) else { continue }
                    let depth = distanceToEdges(parts, p)
                    if depth >= best {
                        best = depth
                        bestPoint = p
                    }
                }
            }
            guard let centre = bestPoint else { break }
            let lonStep = (maxLon - minLon) / Double(steps), latStep = (maxLat - minLat) / Double(steps)
            (minLon, maxLon) = (centre.lon - 2 * lonStep, centre.lon + 2 * lonStep)
            (minLat, maxLat) = (centre.lat - 2 * latStep, centre.lat + 2 * latStep)
        }
        return best
    }
}
