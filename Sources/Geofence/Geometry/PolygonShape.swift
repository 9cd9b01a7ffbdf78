import Shared

/// A polygon or multipolygon with holes, ready for point-in-polygon tests.
///
/// Edges are straight lines in longitude/latitude, as RFC 7946 defines them, so
/// containment is decided in degrees with no projection at all and is exact up to
/// floating point. Rings are tested with the even-odd rule, which gives holes (and
/// the disjoint parts of a multipolygon) their meaning without telling rings apart.
///
/// Longitudes are unwrapped along each ring (no step of more than 180 degrees
/// between neighbours), so a polygon across the antimeridian is one continuous
/// shape; a fix's longitude is moved into the same range before testing.
///
/// Polygons with more than a few dozen edges get latitude bands: each band lists
/// the edges whose latitude range overlaps it, so a test visits only the edges a
/// horizontal ray through the fix can meet, not the whole ring.
final class PolygonShape: Sendable {
    /// Vertices of closed rings, one after the other (each ring repeats its first vertex).
    let xs: [Double]
    let ys: [Double]
    /// Index into `xs` where each ring starts, plus the total count at the end.
    let ringStarts: [Int]
    let minX: Double, maxX: Double, minY: Double, maxY: Double
    /// The middle of the unwrapped longitude range; a fix is moved within 180 degrees of it.
    let centreX: Double
    let bandCount: Int
    let bandScale: Double
    /// `bandEdges[bandStarts[b]..<bandStarts[b+1]]` are the edges (by start vertex) in band b.
    let bandStarts: [Int32]
    let bandEdges: [UInt16]
    /// The given longitudes where unwrapping changed any (across the antimeridian), so
    /// that the GeoJSON geometry can be given back bit for bit.
    let originalLons: [Double]?
    /// For a MultiPolygon, how many rings each polygon has; empty for a Polygon.
    let partRingCounts: [Int]

    static let bandThreshold = 24

    /// Takes rings as GeoJSON gives them (validated: closed, at least 4 positions).
    init(rings: [[Position]], partRingCounts: [Int] = []) {
        self.partRingCounts = partRingCounts
        var xs: [Double] = []
        var ys: [Double] = []
        var starts: [Int] = []
        let total = rings.reduce(0) { $0 + $1.count }
        xs.reserveCapacity(total)
        ys.reserveCapacity(total)
        var previous: Double? = nil
        for ring in rings {
            starts.append(xs.count)
            for position in ring {
                let x = Earth.unwrapLongitude(position.lon, after: previous)
                xs.append(x)
                ys.append(position.lat)
                previous = x
            }
            // Keep every ring's closing vertex identical to its first after unwrapping.
            if let first = starts.last, xs.count - first >= 2 {
                xs[xs.count - 1] = xs[first]
                previous = xs[first]
            }
        }
        starts.append(xs.count)
        let given = rings.flatMap { $0.map(\.lon) }
        originalLons = given == xs ? nil : given
        self.xs = xs
        self.ys = ys
        self.ringStarts = starts
        minX = xs.min() ?? 0
        maxX = xs.max() ?? 0
        minY = ys.min() ?? 0
        maxY = ys.max() ?? 0
        centreX = (minX + maxX) / 2

        let edgeCount = max(0, total - rings.count)
        let lowY = ys.min() ?? 0, highY = ys.max() ?? 0
        if edgeCount > Self.bandThreshold, highY > lowY {
            let count = min(max(edgeCount / 2, 1), 8192)
            let scale = Double(count) / (highY - lowY)
            var counts = [Int32](repeating: 0, count: count + 1)
            func bandOf(_ y: Double) -> Int { min(count - 1, max(0, Int((y - lowY) * scale))) }
            for r in 0..<(starts.count - 1) where starts[r + 1] - starts[r] >= 2 {
                for k in starts[r]..<(starts[r + 1] - 1) {
                    let b0 = bandOf(min(ys[k], ys[k + 1]))
                    let b1 = bandOf(max(ys[k], ys[k + 1]))
                    for b in b0...b1 { counts[b + 1] += 1 }
                }
            }
            for b in 0..<count { counts[b + 1] += counts[b] }
            var fill = counts
            var edges = [UInt16](repeating: 0, count: Int(counts[count]))
            for r in 0..<(starts.count - 1) where starts[r + 1] - starts[r] >= 2 {
                for k in starts[r]..<(starts[r + 1] - 1) {
                    let b0 = bandOf(min(ys[k], ys[k + 1]))
                    let b1 = bandOf(max(ys[k], ys[k + 1]))
                    for b in b0...b1 {
                        edges[Int(fill[b])] = UInt16(k)
                        fill[b] += 1
                    }
                }
            }
            bandCount = count
            bandScale = scale
            bandStarts = counts
            bandEdges = edges
        } else {
            bandCount = 0
            bandScale = 0
            bandStarts = []
            bandEdges = []
        }
    }

    /// The box of the polygon in ordinary (wrapped) longitude.
    var boundingBox: BoundingBox {
        BoundingBox(unwrappedMinLon: minX, maxLon: maxX, minLat: minY, maxLat: maxY)
    }

    /// A fix longitude moved into the polygon's unwrapped range.
    func frameX(_ lon: Double) -> Double {
        var x = lon
        if x < centreX - 180 { x += 360 } else if x >= centreX + 180 { x -= 360 }
        return x
    }

    func band(_ y: Double) -> Int { min(bandCount - 1, max(0, Int((y - minY) * bandScale))) }

    /// Point-in-polygon; a point exactly on an edge or vertex is inside.
    func contains(lon: Double, lat: Double) -> Bool {
        let x = frameX(lon)
        let y = lat
        guard x >= minX, x <= maxX, y >= minY, y <= maxY else { return false }
        var inside = false
        return xs.withUnsafeBufferPointer { xs in
            ys.withUnsafeBufferPointer { ys in
                // Returns true when the point lies on the edge, otherwise flips parity on a crossing.
                func visit(_ k: Int) -> Bool {
                    let x1 = xs[k], y1 = ys[k], x2 = xs[k + 1], y2 = ys[k + 1]
                    if (y1 > y) != (y2 > y) {
                        let cross = (x2 - x1) * (y - y1) - (x - x1) * (y2 - y1)
                        if cross == 0 { return true }
                        if (cross > 0) == (y2 > y1) { inside.toggle() }
                    } else if y1 == y {
                        if x == x1 || (y2 == y && (x - x1) * (x - x2) <= 0) { return true }
                    }
                    return false
                }
                if bandCount > 0 {
                    let b = band(y)
                    let edges = bandEdges
                    for i in Int(bandStarts[b])..<Int(bandStarts[b + 1]) where visit(Int(edges[i])) {
                        return true
                    }
                } else {
                    for r in 0..<(ringStarts.count - 1) {
                        let start = ringStarts[r]
                        let end = ringStarts[r + 1] - 1
                        if start >= end { continue }
                        for k in start..<end where visit(k) { return true }
                    }
                }
                return inside
            }
        }
    }

    /// Distance in metres from the point to the nearest edge, measured in the plane
    /// tangent at the point (see `PlanarMetric`); only edges that could be within
    /// `limit` metres are visited, and anything farther is reported as `.infinity`.
    func distanceToBoundary(lon: Double, lat: Double, limit: Double = .infinity) -> Double {
        let metric = PlanarMetric(lat: lat)
        let x = frameX(lon)
        let y = lat
        var best = Double.infinity
        xs.withUnsafeBufferPointer { xs in
            ys.withUnsafeBufferPointer { ys in
                func visit(_ k: Int) {
                    let d = metric.distanceToSegment(
                        px: x, py: y, ax: xs[k], ay: ys[k], bx: xs[k + 1], by: ys[k + 1])
                    if d < best { best = d }
                }
                if bandCount > 0, limit.isFinite {
                    let dLat = limit / Earth.metresPerDegree
                    if y + dLat < minY || y - dLat > maxY { return }
                    let b0 = band(y - dLat)
                    let b1 = band(y + dLat)
                    for i in Int(bandStarts[b0])..<Int(bandStarts[b1 + 1]) { visit(Int(bandEdges[i])) }
                } else {
                    for r in 0..<(ringStarts.count - 1) {
                        let start = ringStarts[r]
                        let end = ringStarts[r + 1] - 1
                        if start >= end { continue }
                        for k in start..<end { visit(k) }
                    }
                }
            }
        }
        return best <= limit ? best : .infinity
    }

    /// The geometry as it was given, rebuilt for events (so the engine need not keep
    /// the zones documents alive next to its own copy of every vertex).
    var geometry: GeoJSONGeometry {
        let lons = originalLons ?? xs
        let rings = (0..<(ringStarts.count - 1)).map { r in
            (ringStarts[r]..<ringStarts[r + 1]).map { Position(lon: lons[$0], lat: ys[$0]) }
        }
        guard !partRingCounts.isEmpty else { return .polygon(rings) }
        var parts: [[[Position]]] = []
        var next = 0
        for count in partRingCounts {
            parts.append(Array(rings[next..<(next + count)]))
            next += count
        }
        return .multiPolygon(parts)
    }

    /// All vertices in ordinary longitude, for enclosing circles and interior points.
    var positions: [(lon: Double, lat: Double)] {
        (0..<xs.count).map { (Earth.wrapLongitude(xs[$0]), ys[$0]) }
    }
}
