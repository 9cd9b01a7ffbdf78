import Shared

/// Geometry checks: everything that would make a fence's inside ill-defined or
/// too costly to evaluate.
enum GeometryValidation {
    static func problems(_ fence: FenceDefinition) -> [String] {
        var problems: [String] = []
        switch fence.geometry {
        case .point(let centre):
            problems += coordinateProblems([centre], label: "the centre")
            if let radius = fence.radius {
                if !radius.isFinite || radius <= 0 { problems.append("radius must be more than 0 metres") }
            } else {
                problems.append("a Point fence needs a radius in metres")
            }
        case .lineString(let line):
            if line.count < 2 { problems.append("a LineString needs at least 2 positions") }
            if line.count > ZoneValidator.maximumVertices {
                problems.append("\(line.count) vertices, at most \(ZoneValidator.maximumVertices) are allowed")
            }
            problems += coordinateProblems(line, label: "a position")
        case .polygon(let rings):
            problems += polygonProblems(rings, label: "")
            problems += vertexCountProblems(rings.reduce(0) { $0 + $1.count })
        case .multiPolygon(let parts):
            if parts.isEmpty { problems.append("a MultiPolygon needs at least one polygon") }
            for (i, rings) in parts.enumerated() { problems += polygonProblems(rings, label: "polygon \(i) ") }
            problems += vertexCountProblems(parts.reduce(0) { $0 + $1.reduce(0) { $0 + $1.count } })
        }
        return problems
    }

    static func vertexCountProblems(_ count: Int) -> [String] {
        count > ZoneValidator.maximumVertices
            ? ["\(count) vertices, at most \(ZoneValidator.maximumVertices) are allowed"] : []
    }

    static func coordinateProblems(_ positions: [Position], label: String) -> [String] {
        for position in positions {
            if !position.lon.isFinite || !position.lat.isFinite {
                return ["\(label) has a coordinate that is not a finite number"]
            }
            if !(-180...180).contains(position.lon) || !(-90...90).contains(position.lat) {
                return ["\(label) [\(position.lon), \(position.lat)] is out of range (longitude -180...180, latitude -90...90)"]
            }
        }
        return []
    }

    static func polygonProblems(_ rings: [[Position]], label: String) -> [String] {
        var problems: [String] = []
        if rings.isEmpty { return ["\(label)has no rings"] }
        var wellFormed = true
        for (r, ring) in rings.enumerated() {
            let name = "\(label)ring \(r)"
            let coordinates = coordinateProblems(ring, label: "\(name) position")
            problems += coordinates
            if !coordinates.isEmpty { wellFormed = false; continue }
            if ring.count < 4 {
                problems.append("\(name) has \(ring.count) positions, a ring needs at least 4")
                wellFormed = false
            } else if ring.first != ring.last {
                problems.append("\(name) is not closed: its last position must repeat its first")
                wellFormed = false
            }
        }
        guard wellFormed else { return problems }
        // Unwrap longitudes along each ring, as the engine does, to see the shape it will see.
        var segments: [Segment] = []
        var minX = Double.infinity, maxX = -Double.infinity
        var previous: Double? = nil
        for (r, ring) in rings.enumerated() {
            var xs: [Double] = []
            for position in ring {
                xs.append(Earth.unwrapLongitude(position.lon, after: xs.last ?? previous))
            }
            if abs(xs[xs.count - 1] - xs[0]) > 1e-9 {
                problems.append("\(label)ring \(r) goes round a pole, which a fence cannot do")
                return problems
            }
            previous = xs[0]
            minX = min(minX, xs.min()!)
            maxX = max(maxX, xs.max()!)
            for k in 0..<(ring.count - 1) {
                segments.append(
                    Segment(ring: r, index: k, last: ring.count - 2, ax: xs[k], ay: ring[k].lat, bx: xs[k + 1], by: ring[k + 1].lat))
            }
        }
        if maxX - minX >= 180 {
            problems.append("\(label)spans \(Int(maxX - minX)) degrees of longitude, a fence must span less than 180")
            return problems
        }
        if let (a, b) = SelfIntersection.find(segments) {
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
    var ring: Int
    var index: Int
    /// Index of the ring's last edge, to recognise the neighbours of its first.
    var last: Int
    var ax: Double, ay: Double, bx: Double, by: Double

    func isNeighbour(of other: Segment) -> Bool {
        guard ring == other.ring else { return false }
        let d = abs(index - other.index)
        return d <= 1 || d == last
    }
}

/// Finds two edges that meet where they should not (anything but neighbours sharing
/// their common vertex). Edges are bucketed in a grid so that a 10,000-vertex ring
/// costs about n·√n tests, not n².
enum SelfIntersection {
    static func find(_ segments: [Segment]) -> (Segment, Segment)? {
        let n = segments.count
        if n <= 16 {
            for i in 0..<n {
                for j in (i + 1)..<max(i + 1, n) where intersects(segments[i], segments[j]) { return (segments[i], segments[j]) }
            }
            return nil
        }
        var minX = Double.infinity, maxX = -Double.infinity, minY = Double.infinity, maxY = -Double.infinity
        for s in segments {
            minX = min(minX, s.ax, s.bx); maxX = max(maxX, s.ax, s.bx)
            minY = min(minY, s.ay, s.by); maxY = max(maxY, s.ay, s.by)
        }
        let g = max(1, Int(Double(n).squareRoot()))
        let sx = Double(g) / max(maxX - minX, 1e-12)
        let sy = Double(g) / max(maxY - minY, 1e-12)
        func cx(_ x: Double) -> Int { min(g - 1, max(0, Int((x - minX) * sx))) }
        func cy(_ y: Double) -> Int { min(g - 1, max(0, Int((y - minY) * sy))) }
        var cells = [[Int32]](repeating: [], count: g * g)
        for (i, s) in segments.enumerated() {
            for x in cx(min(s.ax, s.bx))...cx(max(s.ax, s.bx)) {
                for y in cy(min(s.ay, s.by))...cy(max(s.ay, s.by)) { cells[y * g + x].append(Int32(i)) }
            }
        }
        for cell in cells where cell.count > 1 {
            for i in 0..<cell.count {
                for j in (i + 1)..<cell.count {
                    let a = segments[Int(cell[i])], b = segments[Int(cell[j])]
                    if intersects(a, b) { return cell[i] < cell[j] ? (a, b) : (b, a) }
                }
            }
        }
        return nil
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
