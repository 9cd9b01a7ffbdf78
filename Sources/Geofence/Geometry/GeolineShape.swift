import Shared

/// A GEOLINE: a LineString that checks a device in when its path crosses it.
///
/// The device's path between two fixes and the line's segments are all straight in
/// longitude/latitude; where two segments meet and on which side a point lies are
/// unchanged by the affine maps between degrees and local metres, so the test runs
/// in degrees with no projection error.
final class GeolineShape: Sendable {
    /// As given, for events.
    let positions: [Position]
    /// Longitudes unwrapped along the line, and latitudes.
    let xs: [Double]
    let ys: [Double]
    let centreX: Double
    let box: BoundingBox

    init(positions: [Position]) {
        self.positions = positions
        var xs: [Double] = []
        var ys: [Double] = []
        var previous: Double? = nil
        for position in positions {
            let x = Earth.unwrapLongitude(position.lon, after: previous)
            xs.append(x)
            ys.append(position.lat)
            previous = x
        }
        self.xs = xs
        self.ys = ys
        let minX = xs.min() ?? 0, maxX = xs.max() ?? 0
        centreX = (minX + maxX) / 2
        box = BoundingBox(unwrappedMinLon: minX, maxLon: maxX, minLat: ys.min() ?? 0, maxLat: ys.max() ?? 0)
    }

    func frameX(_ lon: Double) -> Double {
        var x = lon
        if x < centreX - 180 { x += 360 } else if x >= centreX + 180 { x -= 360 }
        return x
    }

    /// The first crossing along the path from `from` to `to`, if any.
    ///
    /// Half-open on both sides so that no crossing is counted twice: the path owns its
    /// end but not its start (a fix exactly on the line crosses on arrival, not again
    /// on departure), and each segment owns its start vertex but not its end (the
    /// last segment owns both).
    func firstCrossing(fromLat: Double, fromLon: Double, toLat: Double, toLon: Double) -> GeolineCrossing? {
        let px = frameX(fromLon)
        var qx = toLon
        // Keep the path continuous with its start, then in the line's range.
        while qx - px > 180 { qx -= 360 }
        while px - qx > 180 { qx += 360 }
        let py = fromLat, qy = toLat
        let vx = qx - px, vy = qy - py
        var best: (t: Double, x: Double, y: Double, direction: CrossingDirection)? = nil
        let last = xs.count - 2
        guard last >= 0 else { return nil }
        for k in 0...last {
            let ax = xs[k], ay = ys[k]
            let rx = xs[k + 1] - ax, ry = ys[k + 1] - ay
            let denominator = vx * ry - vy * rx
            if denominator == 0 { continue }
            let wx = ax - px, wy = ay - py
            let t = (wx * ry - wy * rx) / denominator
            let s = (wx * vy - wy * vx) / denominator
            guard t > 0, t <= 1, s >= 0, k == last ? s <= 1 : s < 1 else { continue }
            if let current = best, current.t <= t { continue }
            // The path turns right of the line's direction when r × v < 0.
            let turn = rx * vy - ry * vx
            best = (t, ax + s * rx, ay + s * ry, turn < 0 ? .leftToRight : .rightToLeft)
        }
        guard let best else { return nil }
        return GeolineCrossing(lat: best.y, lon: Earth.wrapLongitude(best.x), direction: best.direction)
    }
}
