import Shared

/// Geometry checks: everything that would make a fence's inside ill-defined or
/// too costly to evaluate.
///
/// A million fences are checked whenever zones load, so the checks allocate
/// nothing for a fence that passes: working memory comes from a `Scratch` that
/// each worker keeps from one fence to the next, and problem texts are only
/// written when there is a problem.
enum GeometryValidation {
    /// Working memory of one worker.
    struct Scratch {
        var segments: [Segment] = []
        var buckets: [Int32] = []
        var order: [Int32] = []
    }

    static func problems(_ fence: FenceDefinition) -> [String] {
        var scratch = Scratch()
        return problems(fence, scratch: &scratch)
    }

    static func problems(_ fence: FenceDefinition, scratch: inout Scratch) -> [String] {
        var problems: [String] = []
        switch fence.geometry {
        case .point(let centre):
            if let problem = coordinateProblem(centre, label: "the centre") { problems.append(problem) }
            if let radius = fence.radius {
                if !radius.isFinite || radius <= 0 { problems.append("radius must be more than 0 metres") }
            } else {
                problems.append("a Point fence needs a radius in metres")
            }
        case .lineString(let line):
            if line.count < 2 { problems.append("a LineString needs at least 2 positions") }
            if line.count > InputLimits.maximumPositions {
                problems.append("\(line.count) positions, at most \(InputLimits.maximumPositions) are allowed")
            }
            if let problem = coordinateProblem(line, label: "a position") { problems.append(problem) }
        case .polygon(let rings):
            problems += polygonProblems(rings, label: "", scratch: &scratch)
            problems += vertexCountProblems(rings.reduce(0) { $0 + $1.count })
        case .multiPolygon(let parts):
            if parts.isEmpty { problems.append("a MultiPolygon needs at least one polygon") }
            for (i, rings) in parts.enumerated() {
                problems += polygonProblems(rings, label: "polygon \(i) ", scratch: &scratch)
            }
            problems += vertexCountProblems(parts.reduce(0) { $0 + $1.reduce(0) { $0 + $1.count } })
        }
        return problems
    }

    static func vertexCountProblems(_ count: Int) -> [String] {
        count > InputLimits.maximumPositions
            ? ["\(count) positions, at most \(InputLimits.maximumPositions) are allowed"] : []
    }

    static func coordinateProblem(_ position: Position, label: @autoclosure () -> String) -> String? {
        if !position.lon.isFinite || !position.lat.isFinite {
            return "\(label()) has a coordinate that is not a finite number"
        }
        if !(-180...180).contains(position.lon) || !(-90...90).contains(position.lat) {
            return "\(label()) [\(position.lon), \(position.lat)] is out of range (longitude -180...180, latitude -90...90)"
        }
        return nil
    }

    /// The first position's problem, if any has one.
    static func coordinateProblem(_ positions: [Position], label: @autoclosure () -> String) -> String? {
        for position in positions {
            if let problem = coordinateProblem(position, label: label()) { return problem }
        }
        return nil
    }

    static func polygonProblems(_ rings: [[Position]], label: String, scratch: inout Scratch) -> [String] {
        var problems: [String] = []
        if rings.isEmpty { return ["\(label)has no rings"] }
        var wellFormed = true
        for (r, ring) in rings.enumerated() {
            if let problem = coordinateProblem(ring, label: "\(label)ring \(r) position") {
                problems.append(problem)
                wellFormed = false
                continue
            }
            if ring.count < 4 {
                problems.append("\(label)ring \(r) has \(ring.count) positions, a ring needs at least 4")
                wellFormed = false
            } else if ring.first != ring.last {
                problems.append("\(label)ring \(r) is not closed: its last position must repeat its first")
                wellFormed = false
            }
        }
        guard wellFormed else { return problems }
        // Unwrap longitudes along each ring, as the engine does, to see the shape it will see.
        scratch.segments.removeAll(keepingCapacity: true)
        var minX = Double.infinity, maxX = -Double.infinity
        var previous: Double? = nil
        for (r, ring) in rings.enumerated() {
            let firstX = Earth.unwrapLongitude(ring[0].lon, after: previous)
            var x = firstX
            minX = min(minX, x)
            maxX = max(maxX, x)
            for k in 0..<(ring.count - 1) {
                let nextX = Earth.unwrapLongitude(ring[k + 1].lon, after: x)
                scratch.segments.append(
                    Segment(
                        ring: Int32(r), index: Int32(k), last: Int32(ring.count - 2), ax: x, ay: ring[k].lat, bx: nextX,
                        by: ring[k + 1].lat))
                x = nextX
                minX = min(minX, x)
                maxX = max(maxX, x)
            }
            if abs(x - firstX) > 1e-9 {
                problems.append("\(label)ring \(r) goes round a pole, which a fence cannot do")
                return problems
            }
            previous = firstX
        }
        if maxX - minX >= 180 {
            problems.append("\(label)spans \(Int(maxX - minX)) degrees of longitude, a fence must span less than 180")
            return problems
        }
        if let (a, b) = SelfIntersection.find(scratch.segments, buckets: &scratch.buckets, order: &scratch.order) {
            if a.ring == b.ring {
                problems.append(
                    "\(label)ring \(a.ring) intersects itself (edges \(a.index) and \(b.index), near [\(a.ax), \(a.ay)])")
            } else {
                problems.append("\(label)rings \(a.ring) and \(b.ring) intersect (near [\(a.ax), \(a.ay)])")
            }
        }
        return problems
    }
}

/// One edge of a ring.
struct Segment {
    var ring: Int32
    var index: Int32
    /// Index of the ring's last edge, to recognise the neighbours of its first.
    var last: Int32
    var ax: Double, ay: Double, bx: Double, by: Double

    func isNeighbour(of other: Segment) -> Bool {
        guard ring == other.ring else { return false }
        let d = abs(index - other.index)
        return d <= 1 || d == last
    }

    func low(alongX: Bool) -> Double { alongX ? min(ax, bx) : min(ay, by) }
    func high(alongX: Bool) -> Double { alongX ? max(ax, bx) : max(ay, by) }
}

/// Finds two edges that meet where they should not (anything but neighbours sharing
/// their common vertex).
///
/// A sweep along one axis without sorting: edges are bucketed by where they start
/// along it, and each is compared only with the edges that start within its own
/// range (on that axis), and only when their ranges on the other axis overlap too.
/// The axis is the one along which edges overlap least, so a ring of n edges costs
/// about n, not n², unless it is folded on itself along both axes.
enum SelfIntersection {
    static func find(_ segments: [Segment], buckets: inout [Int32], order: inout [Int32]) -> (Segment, Segment)? {
        let n = segments.count
        return segments.withUnsafeBufferPointer { segments in
            if n <= 16 {
                for i in 0..<n {
                    for j in (i + 1)..<max(i + 1, n) where intersects(segments[i], segments[j]) {
                        return (segments[i], segments[j])
                    }
                }
                return nil
            }
            var minX = Double.infinity, maxX = -Double.infinity, minY = Double.infinity, maxY = -Double.infinity
            var spanX = 0.0, spanY = 0.0
            for s in segments {
                minX = min(minX, s.ax, s.bx)
                maxX = max(maxX, s.ax, s.bx)
                minY = min(minY, s.ay, s.by)
                maxY = max(maxY, s.ay, s.by)
                spanX += abs(s.bx - s.ax)
                spanY += abs(s.by - s.ay)
            }
            // The share of the extent an average edge covers: the lower, the fewer pairs to compare.
            let alongX = spanX * max(maxY - minY, .leastNormalMagnitude) <= spanY * max(maxX - minX, .leastNormalMagnitude)
            let origin = alongX ? minX : minY
            let extent = alongX ? maxX - minX : maxY - minY
            let bucketCount = n
            let scale = extent > 0 ? Double(bucketCount) / extent : 0
            func bucket(_ v: Double) -> Int { min(bucketCount - 1, max(0, Int((v - origin) * scale))) }
            // Counting sort by bucket: afterwards, bucket b holds order[ends[b - 1] ..< ends[b]].
            buckets.removeAll(keepingCapacity: true)
            buckets.append(contentsOf: repeatElement(0, count: bucketCount))
            order.removeAll(keepingCapacity: true)
            order.append(contentsOf: repeatElement(0, count: n))
            return buckets.withUnsafeMutableBufferPointer { ends in
                order.withUnsafeMutableBufferPointer { order in
                    for s in segments { ends[bucket(s.low(alongX: alongX))] += 1 }
                    var total: Int32 = 0
                    for b in 0..<bucketCount {
                        let count = ends[b]
                        ends[b] = total
                        total += count
                    }
                    for (i, s) in segments.enumerated() {
                        let b = bucket(s.low(alongX: alongX))
                        order[Int(ends[b])] = Int32(i)
                        ends[b] += 1
                    }
                    for (i, first) in segments.enumerated() {
                        let low = first.low(alongX: alongX), high = first.high(alongX: alongX)
                        let crossLow = first.low(alongX: !alongX), crossHigh = first.high(alongX: !alongX)
                        let firstBucket = bucket(low)
                        for b in firstBucket...bucket(high) {
                            for k in Int(b == 0 ? 0 : ends[b - 1])..<Int(ends[b]) {
                                let j = Int(order[k])
                                let second = segments[j]
                                // Each pair once: the second starts after the first (or with it, and comes later).
                                let start = second.low(alongX: alongX)
                                if start < low || start > high || (start == low && j <= i) { continue }
                                if second.low(alongX: !alongX) <= crossHigh, second.high(alongX: !alongX) >= crossLow,
                                    intersects(first, second)
                                {
                                    return i < j ? (first, second) : (second, first)
                                }
                            }
                        }
                    }
                    return nil
                }
            }
        }
    }

    static func intersects(_ a: Segment, _ b: Segment) -> Bool {
        if a.isNeighbour(of: b) {
            // Neighbours share a vertex; they are wrong only if they fold back over each other.
            return overlapCollinear(a, b)
        }
        let d1 = orientation(b.ax, b.ay, b.bx, b.by, a.ax, a.ay)
        let d2 = orientation(b.ax, b.ay, b.bx, b.by, a.bx, a.by)
        let d3 = orientation(a.ax, a.ay, a.bx, a.by, b.ax, b.ay)
        let d4 = orientation(a.ax, a.ay, a.bx, a.by, b.bx, b.by)
        if ((d1 > 0 && d2 < 0) || (d1 < 0 && d2 > 0)) && ((d3 > 0 && d4 < 0) || (d3 < 0 && d4 > 0)) { return true }
        if d1 == 0 && onSegment(b, a.ax, a.ay) { return true }
        if d2 == 0 && onSegment(b, a.bx, a.by) { return true }
        if d3 == 0 && onSegment(a, b.ax, b.ay) { return true }
        if d4 == 0 && onSegment(a, b.bx, b.by) { return true }
        return false
    }

    static func overlapCollinear(_ a: Segment, _ b: Segment) -> Bool {
        guard orientation(a.ax, a.ay, a.bx, a.by, b.ax, b.ay) == 0,
            orientation(a.ax, a.ay, a.bx, a.by, b.bx, b.by) == 0
        else { return false }
        // Collinear neighbours overlap when the far end of one lies inside the other.
        let shared = (a.bx == b.ax && a.by == b.ay) ? (b.bx, b.by, a) : (b.ax, b.ay, a)
        let (x, y, s) = shared
        let lengthA = (a.bx - a.ax) * (a.bx - a.ax) + (a.by - a.ay) * (a.by - a.ay)
        let lengthB = (b.bx - b.ax) * (b.bx - b.ax) + (b.by - b.ay) * (b.by - b.ay)
        guard lengthA > 0, lengthB > 0 else { return false }
        return onSegment(s, x, y) && !((x == s.ax && y == s.ay) || (x == s.bx && y == s.by))
    }

    static func orientation(_ ax: Double, _ ay: Double, _ bx: Double, _ by: Double, _ px: Double, _ py: Double) -> Double {
        (bx - ax) * (py - ay) - (by - ay) * (px - ax)
    }

    static func onSegment(_ s: Segment, _ x: Double, _ y: Double) -> Bool {
        x >= min(s.ax, s.bx) && x <= max(s.ax, s.bx) && y >= min(s.ay, s.by) && y <= max(s.ay, s.by)
    }
}
