import Shared

/// Every polygon and multipolygon (with holes) of an engine, ready for point-in-polygon tests.
///
/// Edges are straight lines in longitude/latitude, as RFC 7946 defines them, so
/// containment is decided in degrees with no projection at all and is exact up to
/// floating point. Rings are tested with the even-odd rule, which gives holes (and
/// the disjoint parts of a multipolygon) their meaning without telling rings apart.
///
/// Longitudes are unwrapped along each polygon (no step of more than 180 degrees
/// between neighbours), so a polygon across the antimeridian is one continuous
/// shape; a fix's longitude is moved into the same range before testing.
///
/// Polygons with more than a few dozen edges get latitude bands: each band lists
/// the edges whose latitude range overlaps it, so a test visits only the edges a
/// horizontal ray through the fix can meet, not the whole ring.
///
/// All vertices of all polygons sit in two flat buffers, ring after ring, and a
/// polygon is a record of where its rings and bands begin: a million fences are a
/// few large allocations rather than several small arrays each.
final class PolygonStore: Sendable {
    struct Record: BitwiseCopyable, Sendable {
        /// Index in `ringStarts` of the polygon's first ring.
        var firstRing: Int
        var ringCount: Int32
        /// Latitude bands; 0 when the polygon is small enough to walk every edge.
        var bandCount: Int32
        /// Index in `bandStarts` of the polygon's first band (it has bandCount + 1 entries).
        var firstBand: Int
        /// Index in `bandEdges` where the polygon's band lists begin.
        var firstBandEdge: Int
        /// The box in unwrapped longitude.
        var minX: Double, maxX: Double, minY: Double, maxY: Double
        var bandScale: Double

        /// The middle of the unwrapped longitude range; a fix is moved within 180 degrees of it.
        var centreX: Double { (minX + maxX) / 2 }
    }

    let records: FixedBuffer<Record>
    /// Unwrapped longitudes and latitudes of closed rings (each repeats its first vertex).
    let xs: FixedBuffer<Double>
    let ys: FixedBuffer<Double>
    /// Vertex index where each ring starts, and one more entry: the end of the last ring.
    let ringStarts: FixedBuffer<Int>
    /// Band b of a polygon lists the edges `bandEdges[e + bandStarts[f + b] ..< e + bandStarts[f + b + 1]]`
    /// (e: its `firstBandEdge`, f: its `firstBand`), each edge by its start vertex
    /// counted from the polygon's first vertex.
    let bandStarts: FixedBuffer<Int32>
    let bandEdges: FixedBuffer<UInt16>
    /// The given longitudes of polygons that unwrapping changed (across the
    /// antimeridian), so that their GeoJSON geometry can be given back bit for bit.
    let originalLons: [Int32: [Double]]
    /// How many rings each part of a MultiPolygon has.
    let partRingCounts: [Int32: [Int]]

    static let bandThreshold = 24
    /// Positions per polygon that band lists can address.
    static let maximumVertices = Int(UInt16.max)

    static func bands(forEdges edges: Int) -> Int {
        edges > bandThreshold ? min(max(edges / 2, 1), 8192) : 0
    }

    subscript(p: Int) -> PolygonShape { PolygonShape(store: self, index: p) }

    private init(builder: Builder, originalLons: [Int32: [Double]], partRingCounts: [Int32: [Int]]) {
        records = builder.records
        xs = builder.xs
        ys = builder.ys
        ringStarts = builder.ringStarts
        bandStarts = builder.bandStarts
        bandEdges = builder.bandEdges
        self.originalLons = originalLons
        self.partRingCounts = partRingCounts
    }

    /// A fix longitude moved into a polygon's unwrapped range.
    @inline(__always)
    static func frameX(_ lon: Double, _ record: Record) -> Double {
        var x = lon
        let centre = record.centreX
        if x < centre - 180 { x += 360 } else if x >= centre + 180 { x -= 360 }
        return x
    }

    @inline(__always)
    static func band(_ y: Double, _ record: Record) -> Int {
        min(Int(record.bandCount) - 1, max(0, Int((y - record.minY) * record.bandScale)))
    }

    /// Point-in-polygon for polygon p; a point exactly on an edge or vertex is inside.
    func contains(_ p: Int, lon: Double, lat: Double) -> Bool {
        let record = records[p]
        let x = Self.frameX(lon, record)
        let y = lat
        guard x >= record.minX, x <= record.maxX, y >= record.minY, y <= record.maxY else { return false }
        let xs = self.xs.base, ys = self.ys.base
        var inside = false
        // Returns true when the point lies on the edge, otherwise flips parity on a crossing.
        @inline(__always) func visit(_ k: Int) -> Bool {
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
        if record.bandCount > 0 {
            let b = record.firstBand + Self.band(y, record)
            let first = ringStarts[record.firstRing]
            let edges = bandEdges.base + record.firstBandEdge
            for i in Int(bandStarts[b])..<Int(bandStarts[b + 1]) where visit(first + Int(edges[i])) {
                return true
            }
        } else {
            for r in record.firstRing..<(record.firstRing + Int(record.ringCount)) {
                let start = ringStarts[r]
                let end = ringStarts[r + 1] - 1
                if start >= end { continue }
                for k in start..<end where visit(k) { return true }
            }
        }
        return inside
    }

    /// Distance in metres from the point to polygon p's nearest edge, measured in the
    /// plane tangent at the point (see `PlanarMetric`); only edges that could be within
    /// `limit` metres are visited, and anything farther is reported as `.infinity`.
    func distanceToBoundary(_ p: Int, lon: Double, lat: Double, limit: Double = .infinity) -> Double {
        let record = records[p]
        let metric = PlanarMetric(lat: lat)
        let x = Self.frameX(lon, record)
        let y = lat
        let xs = self.xs.base, ys = self.ys.base
        var best = Double.infinity
        @inline(__always) func visit(_ k: Int) {
            let d = metric.distanceToSegment(px: x, py: y, ax: xs[k], ay: ys[k], bx: xs[k + 1], by: ys[k + 1])
            if d < best { best = d }
        }
        if record.bandCount > 0, limit.isFinite {
            let dLat = limit / Earth.metresPerDegree
            if y + dLat < record.minY || y - dLat > record.maxY { return .infinity }
            let b0 = record.firstBand + Self.band(y - dLat, record)
            let b1 = record.firstBand + Self.band(y + dLat, record)
            let first = ringStarts[record.firstRing]
            let edges = bandEdges.base + record.firstBandEdge
            for i in Int(bandStarts[b0])..<Int(bandStarts[b1 + 1]) { visit(first + Int(edges[i])) }
        } else {
            for r in record.firstRing..<(record.firstRing + Int(record.ringCount)) {
                let start = ringStarts[r]
                let end = ringStarts[r + 1] - 1
                if start >= end { continue }
                for k in start..<end { visit(k) }
            }
        }
        return best <= limit ? best : .infinity
    }

    /// Positions of polygon p, every ring counted with its closing position, as in its GeoJSON.
    func positionCount(_ p: Int) -> Int {
        let record = records[p]
        return ringStarts[record.firstRing + Int(record.ringCount)] - ringStarts[record.firstRing]
    }

    /// Polygon p's geometry as it was given, rebuilt for events (so that the engine
    /// need not keep the zones documents alive next to its own copy of every vertex).
    func geometry(_ p: Int) -> GeoJSONGeometry {
        let record = records[p]
        let first = ringStarts[record.firstRing]
        let original = originalLons[Int32(p)]
        let rings = (record.firstRing..<(record.firstRing + Int(record.ringCount))).map { r in
            (ringStarts[r]..<ringStarts[r + 1]).map { k in
                Position(lon: original?[k - first] ?? xs[k], lat: ys[k])
            }
        }
        guard let parts = partRingCounts[Int32(p)] else { return .polygon(rings) }
        var multi: [[[Position]]] = []
        var next = 0
        for count in parts {
            multi.append(Array(rings[next..<(next + count)]))
            next += count
        }
        return .multiPolygon(multi)
    }
}

extension PolygonStore {
    /// Where every polygon's rings and bands will go, worked out from ring sizes alone
    /// (cheap, in fence order) before the vertices are filled in on every core.
    struct Layout {
        fileprivate var records: [Record] = []
        fileprivate var ringStarts: [Int] = [0]
        fileprivate var bandStartCount = 0

        var polygonCount: Int { records.count }

        /// Reserves the next polygon; `ringSizes` are the positions of each ring.
        mutating func add(ringSizes: some Sequence<Int>) -> Int32 {
            let firstRing = ringStarts.count - 1
            var vertices = ringStarts[firstRing]
            var edges = 0
            for size in ringSizes {
                vertices += size
                edges += max(0, size - 1)
                ringStarts.append(vertices)
            }
            let bands = PolygonStore.bands(forEdges: edges)
            records.append(
                Record(
                    firstRing: firstRing, ringCount: Int32(ringStarts.count - 1 - firstRing), bandCount: Int32(bands),
                    firstBand: bandStartCount, firstBandEdge: 0, minX: 0, maxX: 0, minY: 0, maxY: 0, bandScale: 0))
            bandStartCount += bands > 0 ? bands + 1 : 0
            return Int32(records.count - 1)
        }
    }

    /// Fills the laid-out store in three steps: `fill` every polygon (on any thread,
    /// each polygon by one), `layOutBandEdges` once, `fillBandEdges` of every polygon
    /// (again on any thread), then `finish`.
    final class Builder: @unchecked Sendable {
        fileprivate let records: FixedBuffer<Record>
        fileprivate let xs: FixedBuffer<Double>
        fileprivate let ys: FixedBuffer<Double>
        fileprivate let ringStarts: FixedBuffer<Int>
        fileprivate let bandStarts: FixedBuffer<Int32>
        fileprivate var bandEdges = FixedBuffer<UInt16>(count: 0)

        init(_ layout: Layout) {
            records = FixedBuffer(layout.records)
            ringStarts = FixedBuffer(layout.ringStarts)
            let vertices = layout.ringStarts.last ?? 0
            xs = FixedBuffer(count: vertices)
            ys = FixedBuffer(count: vertices)
            bandStarts = FixedBuffer(count: layout.bandStartCount)
        }

        var polygonCount: Int { records.count }

        /// Writes polygon p's vertices, box and band sizes. Returns the given longitudes
        /// when unwrapping changed any.
        func fill(_ p: Int32, rings: [[Position]]) -> [Double]? {
            var record = records[Int(p)]
            var k = ringStarts[record.firstRing]
            let first = k
            precondition(ringStarts[record.firstRing + Int(record.ringCount)] - first <= PolygonStore.maximumVertices)
            var minX = Double.infinity, maxX = -Double.infinity, minY = Double.infinity, maxY = -Double.infinity
            var previous: Double? = nil
            var unwrapped = false
            for ring in rings {
                let ringStart = k
                for position in ring {
                    let x = Earth.unwrapLongitude(position.lon, after: previous)
                    if x != position.lon { unwrapped = true }
                    xs.set(k, to: x)
                    ys.set(k, to: position.lat)
                    previous = x
                    k += 1
                }
                // Keep every ring's closing vertex identical to its first after unwrapping.
                if k - ringStart >= 2 {
                    xs.set(k - 1, to: xs[ringStart])
                    previous = xs[ringStart]
                }
                for i in ringStart..<k {
                    minX = min(minX, xs[i])
                    maxX = max(maxX, xs[i])
                    minY = min(minY, ys[i])
                    maxY = max(maxY, ys[i])
                }
            }
            if k == first { (minX, maxX, minY, maxY) = (0, 0, 0, 0) }
            record.minX = minX
            record.maxX = maxX
            record.minY = minY
            record.maxY = maxY
            if record.bandCount > 0 {
                record.bandScale = maxY > minY ? Double(record.bandCount) / (maxY - minY) : 0
                countBandEdges(record)
            }
            records.set(Int(p), to: record)
            return unwrapped ? rings.flatMap { $0.map(\.lon) } : nil
        }

        /// Calls `body(k, b0, b1)` for every edge k (by its start vertex) of the polygon
        /// and the first and last band its latitude range overlaps.
        private func forEachEdge(of record: Record, _ body: (Int, Int, Int) -> Void) {
            let count = Int(record.bandCount)
            func bandOf(_ y: Double) -> Int { min(count - 1, max(0, Int((y - record.minY) * record.bandScale))) }
            for r in record.firstRing..<(record.firstRing + Int(record.ringCount)) {
                let start = ringStarts[r], end = ringStarts[r + 1]
                guard end - start >= 2 else { continue }
                for k in start..<(end - 1) {
                    let y1 = ys[k], y2 = ys[k + 1]
                    body(k, bandOf(min(y1, y2)), bandOf(max(y1, y2)))
                }
            }
        }

        /// Sets the polygon's `bandStarts` (counted from its own first band edge).
        private func countBandEdges(_ record: Record) {
            let count = Int(record.bandCount)
            let starts = bandStarts.base + record.firstBand
            starts.initialize(repeating: 0, count: count + 1)
            forEachEdge(of: record) { _, b0, b1 in
                var b = b0
                while b <= b1 {
                    starts[b + 1] += 1
                    b += 1
                }
            }
            for b in 0..<count { starts[b + 1] += starts[b] }
        }

        /// Gives every polygon its place in one band-edge buffer, now that their sizes are known.
        func layOutBandEdges() {
            var total = 0
            for p in 0..<records.count where records[p].bandCount > 0 {
                var record = records[p]
                record.firstBandEdge = total
                records.set(p, to: record)
                total += Int(bandStarts[record.firstBand + Int(record.bandCount)])
            }
            bandEdges = FixedBuffer(count: total)
        }

        /// Lists polygon p's edges in its bands; `cursors` is working memory the caller keeps.
        func fillBandEdges(_ p: Int, cursors: inout [Int32]) {
            let record = records[p]
            guard record.bandCount > 0 else { return }
            let first = ringStarts[record.firstRing]
            let edges = bandEdges.base + record.firstBandEdge
            cursors.removeAll(keepingCapacity: true)
            cursors.append(contentsOf: UnsafeBufferPointer(start: bandStarts.base + record.firstBand, count: Int(record.bandCount)))
            cursors.withUnsafeMutableBufferPointer { cursors in
                forEachEdge(of: record) { k, b0, b1 in
                    var b = b0
                    while b <= b1 {
                        edges[Int(cursors[b])] = UInt16(k - first)
                        cursors[b] += 1
                        b += 1
                    }
                }
            }
        }

        /// Polygon p's vertices once filled in: unwrapped longitudes and latitudes.
        func vertices(_ p: Int32) -> (xs: UnsafeBufferPointer<Double>, ys: UnsafeBufferPointer<Double>) {
            let record = records[Int(p)]
            let first = ringStarts[record.firstRing]
            let count = ringStarts[record.firstRing + Int(record.ringCount)] - first
            return (UnsafeBufferPointer(start: xs.base + first, count: count), UnsafeBufferPointer(start: ys.base + first, count: count))
        }

        func finish(originalLons: [Int32: [Double]], partRingCounts: [Int32: [Int]]) -> PolygonStore {
            PolygonStore(builder: self, originalLons: originalLons, partRingCounts: partRingCounts)
        }
    }
}

/// One polygon of a store, for the rules and tools that look at a single shape.
struct PolygonShape: Sendable {
    let store: PolygonStore
    let index: Int

    init(store: PolygonStore, index: Int) {
        self.store = store
        self.index = index
    }

    /// A polygon in a store of its own; rings as GeoJSON gives them (validated: closed,
    /// at least 4 positions).
    init(rings: [[Position]], partRingCounts: [Int] = []) {
        var layout = PolygonStore.Layout()
        let p = layout.add(ringSizes: rings.map(\.count))
        let builder = PolygonStore.Builder(layout)
        let lons = builder.fill(p, rings: rings)
        builder.layOutBandEdges()
        var cursors: [Int32] = []
        builder.fillBandEdges(Int(p), cursors: &cursors)
        store = builder.finish(
            originalLons: lons.map { [p: $0] } ?? [:], partRingCounts: partRingCounts.isEmpty ? [:] : [p: partRingCounts])
        index = Int(p)
    }

    var record: PolygonStore.Record { store.records[index] }
    var minX: Double { record.minX }
    var maxX: Double { record.maxX }
    var minY: Double { record.minY }
    var maxY: Double { record.maxY }

    /// The box of the polygon in ordinary (wrapped) longitude.
    var boundingBox: BoundingBox {
        BoundingBox(unwrappedMinLon: minX, maxLon: maxX, minLat: minY, maxLat: maxY)
    }

    func contains(lon: Double, lat: Double) -> Bool { store.contains(index, lon: lon, lat: lat) }

    func distanceToBoundary(lon: Double, lat: Double, limit: Double = .infinity) -> Double {
        store.distanceToBoundary(index, lon: lon, lat: lat, limit: limit)
    }

    var geometry: GeoJSONGeometry { store.geometry(index) }
}
