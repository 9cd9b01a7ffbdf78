import Foundation

/// How deep the deepest interior point of a polygon lies (its pole of
/// inaccessibility), the 100 % mark of the percentage-crossed condition.
///
/// A best-first search over square cells (the "polylabel" idea): a cell can hold
/// no point deeper than its centre's depth plus its half-diagonal, so cells that
/// cannot beat the best found are dropped. Computed once per fence when zones are
/// loaded, and only for zones that use the condition.
enum InteriorDepth {
    /// Depth in metres, found to within `precision` metres.
    static func deepest(of polygon: PolygonShape, precision: Double = 1) -> Double {
        let refLat = (polygon.minY + polygon.maxY) / 2
        let metric = PlanarMetric(lat: refLat)
        let width = (polygon.maxX - polygon.minX) * metric.kx
        let height = (polygon.maxY - polygon.minY) * metric.ky
        let size = max(width, height)
        guard size > 0 else { return 0 }

        func depth(_ x: Double, _ y: Double) -> Double {
            let lon = polygon.minX + x / metric.kx
            let lat = polygon.minY + y / metric.ky
            let distance = polygon.distanceToBoundary(lon: lon, lat: lat)
            return polygon.contains(lon: lon, lat: lat) ? distance : -distance
        }
        struct Cell { var x: Double, y: Double, half: Double, depth: Double, potential: Double }
        func cell(_ x: Double, _ y: Double, _ half: Double) -> Cell {
            let d = depth(x, y)
            return Cell(x: x, y: y, half: half, depth: d, potential: d + half * 2.0.squareRoot())
        }
        var heap = Heap<Cell> { $0.potential > $1.potential }
        let start = min(width, height) > 0 ? min(width, height) : size
        let half = start / 2
        var x = 0.0
        while x < width + 1e-9 {
            var y = 0.0
            while y < height + 1e-9 {
                heap.push(cell(x + half, y + half, half))
                y += start
            }
            x += start
        }
        var best = cell(width / 2, height / 2, 0)
        var budget = 200_000
        while let current = heap.pop(), budget > 0 {
            budget -= 1
            if current.depth > best.depth { best = current }
            if current.potential - best.depth <= precision { continue }
            let h = current.half / 2
            heap.push(cell(current.x - h, current.y - h, h))
            heap.push(cell(current.x + h, current.y - h, h))
            heap.push(cell(current.x - h, current.y + h, h))
            heap.push(cell(current.x + h, current.y + h, h))
        }
        return max(0, best.depth)
    }
}

/// A binary heap, ordered by `areInOrder` (the root is the first in that order).
struct Heap<Element> {
    private var items: [Element] = []
    private let areInOrder: (Element, Element) -> Bool

    init(_ areInOrder: @escaping (Element, Element) -> Bool) {
        self.areInOrder = areInOrder
    }

    mutating func push(_ element: Element) {
        items.append(element)
        var child = items.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard areInOrder(items[child], items[parent]) else { break }
            items.swapAt(child, parent)
            child = parent
        }
    }

    mutating func pop() -> Element? {
        guard !items.isEmpty else { return nil }
        items.swapAt(0, items.count - 1)
        let top = items.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1, right = left + 1
            var first = parent
            if left < items.count, areInOrder(items[left], items[first]) { first = left }
            if right < items.count, areInOrder(items[right], items[first]) { first = right }
            if first == parent { break }
            items.swapAt(parent, first)
            parent = first
        }
        return top
    }
}
