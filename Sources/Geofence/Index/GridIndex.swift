/// A multi-level hashed grid over longitude/latitude boxes: the spatial index that
/// finds the fences near a fix in the same few steps whether there are a thousand
/// or a million.
///
/// Level k divides the globe into square cells of 360/2^k degrees. Each box goes to
/// the finest level whose cells are at least as large as the box, so it lands in at
/// most 2 x 2 cells; a point query then reads one cell per level in use (a handful),
/// whatever the density. Cells live in one open-addressing hash table over flat
/// arrays, so the index is a few large allocations with no per-cell objects, and a
/// query allocates nothing. Built once, off the hot path, and never mutated.
///
/// Each entry carries its project and a tight box in single precision (rounded
/// outwards, so never too small), so that most candidates are rejected from the
/// entries array itself, in cache order, without touching the fence.
struct GridIndex: Sendable {
    struct Entry: Sendable {
        var id: Int32
        var project: Int32
        var minLon: Float
        var minLat: Float
        var lonSpan: Float
        var maxLat: Float

        init(id: Int32, project: Int32, box: BoundingBox) {
            self.id = id
            self.project = project
            var west = Float(box.minLon)
            if Double(west) > box.minLon { west = west.nextDown }
            var south = Float(box.minLat)
            if Double(south) > box.minLat { south = south.nextDown }
            var north = Float(box.maxLat)
            if Double(north) < box.maxLat { north = north.nextUp }
            let span = box.lonSpan + (box.minLon - Double(west))
            var width = Float(span)
            if Double(width) < span { width = width.nextUp }
            minLon = west
            minLat = south
            lonSpan = width
            maxLat = north
        }

        @inline(__always)
        func contains(lon: Double, lat: Double) -> Bool {
            guard lat >= Double(minLat), lat <= Double(maxLat) else { return false }
            var d = lon - Double(minLon)
            if d < 0 { d += 360 }
            return d <= Double(lonSpan)
        }
    }

    static let finestLevel = 22
    /// Levels that hold at least one box, coarsest first.
    let levels: [Int]
    /// One slot of the open-addressing table: a cell's key next to its entry range,
    /// so that a lookup touches one cache line before it reaches the entries.
    struct Slot: Sendable {
        var key: UInt64
        var start: Int32
        var count: Int32
    }

    private let slots: [Slot]
    private let shift: UInt64
    let entries: [Entry]

    static func cellSize(_ level: Int) -> Double { 360 / Double(1 << level) }
    static func cellsPerDegree(_ level: Int) -> Double { Double(1 << level) / 360 }

    /// The finest level whose cells are at least `extent` degrees wide. (Using only
    /// every other level halves the lookups per fix but quadruples the candidates per
    /// cell; measured, every level wins, in sparse and in dense fence sets alike.)
    static func level(forExtent extent: Double) -> Int {
        var level = 0
        while level + 1 <= finestLevel, cellSize(level + 1) >= extent { level += 1 }
        return level
    }

    @inline(__always)
    static func column(_ lon: Double, level: Int) -> Int {
        Int(((lon + 180) * cellsPerDegree(level)).rounded(.down)) & ((1 << level) - 1)
    }

    @inline(__always)
    static func row(_ lat: Double, level: Int) -> Int {
        let rows = max(1, 1 << max(0, level - 1))
        return min(rows - 1, max(0, Int(((lat + 90) * cellsPerDegree(level)).rounded(.down))))
    }

    @inline(__always)
    static func key(level: Int, column: Int, row: Int) -> UInt64 {
        let levelBits = UInt64(truncatingIfNeeded: level) &<< 56
        let columnBits = UInt64(truncatingIfNeeded: column) &<< 28
        return levelBits | columnBits | UInt64(truncatingIfNeeded: row)
    }

    @inline(__always)
    private func slot(of key: UInt64) -> Int {
        Int(truncatingIfNeeded: (key &* 0x9E37_79B9_7F4A_7C15) >> shift)
    }

    /// The cells a box covers at its level, each once.
    static func forEachCell(of box: BoundingBox, _ body: (UInt64) -> Void) {
        let extent = max(box.lonSpan, box.maxLat - box.minLat)
        let level = level(forExtent: extent)
        forEachCell(of: box, level: level, body)
    }

    static func forEachCell(of box: BoundingBox, level: Int, _ body: (UInt64) -> Void) {
        let scale = cellsPerDegree(level)
        let columns = 1 << level
        let first = Int(((box.minLon + 180) * scale).rounded(.down))
        let last = Int(((box.minLon + box.lonSpan + 180) * scale).rounded(.down))
        let columnCount = min(columns, last - first + 1)
        let row0 = row(box.minLat, level: level)
        let row1 = row(box.maxLat, level: level)
        var c = 0
        while c < columnCount {
            let column = (first + c) & (columns - 1)
            var r = row0
            while r <= row1 {
                body(key(level: level, column: column, row: r))
                r += 1
            }
            c += 1
        }
    }

    /// Builds the index: `reach[i]` decides the cells of entry i, which stands for
    /// `ids[i]` of `projects[i]` and keeps the (smaller or equal) box `tight[i]`.
    init(reach boxes: [BoundingBox], tight: [BoundingBox], ids: [Int32], projects: [Int32]) {
        var keys: [UInt64] = []
        var owners: [Int32] = []
        keys.reserveCapacity(boxes.count * 2)
        owners.reserveCapacity(boxes.count * 2)
        var used = Set<Int>()
        for (i, box) in boxes.enumerated() {
            let level = Self.level(forExtent: max(box.lonSpan, box.maxLat - box.minLat))
            Self.forEachCell(of: box, level: level) { key in
                // Written as loops over explicit shifts: a closed-range loop around the key
                // arithmetic was miscompiled in release builds (keys lost their level and
                // column), which would silently hide fences. A wrong key must stop the build.
                precondition(key >> 56 == UInt64(level), "spatial index key corrupted")
                keys.append(key)
                owners.append(Int32(i))
                used.insert(Int(key >> 56))
            }
        }
        levels = used.sorted()
        var capacity = 16
        // At most half full: a miss ends at the first empty slot, usually the next one.
        while capacity < keys.count * 2 { capacity <<= 1 }
        shift = UInt64(64 - capacity.trailingZeroBitCount)
        var slots = [Slot](repeating: Slot(key: .max, start: 0, count: 0), count: capacity)
        var slotOfPair = [Int32](repeating: 0, count: keys.count)
        let mask = capacity - 1
        let shift = self.shift
        for (i, key) in keys.enumerated() {
            var s = Int(truncatingIfNeeded: (key &* 0x9E37_79B9_7F4A_7C15) >> shift)
            while slots[s].key != key && slots[s].key != .max { s = (s + 1) & mask }
            slots[s].key = key
            slots[s].count += 1
            slotOfPair[i] = Int32(s)
        }
        // Entries of a cell are contiguous, cells in slot order.
        var next: Int32 = 0
        for s in 0..<capacity where slots[s].key != .max {
            slots[s].start = next
            next += slots[s].count
        }
        var fill = slots.map(\.start)
        let blank = Entry(id: -1, project: -1, box: BoundingBox(minLon: 0, minLat: 0, lonSpan: 0, maxLat: 0))
        var entries = [Entry](repeating: blank, count: keys.count)
        let compact = zip(tight, zip(ids, projects)).map { Entry(id: $0.1.0, project: $0.1.1, box: $0.0) }
        for i in 0..<keys.count {
            let s = Int(slotOfPair[i])
            entries[Int(fill[s])] = compact[Int(owners[i])]
            fill[s] += 1
        }
        self.slots = slots
        self.entries = entries
    }

    /// The entry range of one cell, empty when the cell holds nothing.
    @inline(__always)
    func range(of key: UInt64) -> Range<Int> {
        slots.withUnsafeBufferPointer { slots in
            let mask = slots.count - 1
            var s = slot(of: key)
            while true {
                let found = slots[s]
                if found.key == key { return Int(found.start)..<Int(found.start + found.count) }
                if found.key == .max { return 0..<0 }
                s = (s + 1) & mask
            }
        }
    }

    /// Calls `body` with every entry whose reach may contain the point (a superset:
    /// callers test project, box and shape). An entry appears at most once per
    /// level, and each is stored at a single level, so never twice.
    @inline(__always)
    func forEachCandidate(lon: Double, lat: Double, _ body: (Entry) -> Void) {
        entries.withUnsafeBufferPointer { entries in
            for level in levels {
                let key = Self.key(level: level, column: Self.column(lon, level: level), row: Self.row(lat, level: level))
                for i in range(of: key) { body(entries[i]) }
            }
        }
    }

    /// Calls `body` with every entry whose reach may meet `box` (entries may repeat).
    func forEachCandidate(in box: BoundingBox, _ body: (Entry) -> Void) {
        for level in levels {
            Self.forEachCell(of: box, level: level) { key in
                for i in range(of: key) { body(entries[i]) }
            }
        }
    }
}
