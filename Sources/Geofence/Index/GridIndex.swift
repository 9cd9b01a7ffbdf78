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
    struct Entry: BitwiseCopyable, Sendable {
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

    /// A key mixed by a multiplicative hash; its top bits pick its home slot.
    @inline(__always)
    static func hash(_ key: UInt64) -> UInt64 { key &* 0x9E37_79B9_7F4A_7C15 }

    /// The home slot of a key in a table of `capacity` slots: the hash scaled to the
    /// table (so the table can be exactly as large as it needs to be, not the next
    /// power of two). It grows with the hash, whatever the capacity.
    @inline(__always)
    static func home(of key: UInt64, capacity: Int) -> Int {
        Int(truncatingIfNeeded: hash(key).multipliedFullWidth(by: UInt64(capacity)).high)
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
        self.init(count: boxes.count) { i in
            (boxes[i], Entry(id: ids[i], project: projects[i], box: tight[i]))
        }
    }

    /// Builds the index over `count` entries; `describe(i)` gives the box that decides
    /// entry i's cells (its reach) and the entry itself. `describe` runs on every core.
    ///
    /// The (cell, entry) pairs are sorted by their cell's hash before the table is
    /// filled, so that filling it walks the table and the entries from start to end
    /// instead of jumping to a random slot for every pair, and so that the table can
    /// be sized by the cells actually used; a cell's entries then lie side by side.
    init(count: Int, describe: (Int) -> (reach: BoundingBox, entry: Entry)) {
        let compact = FixedBuffer<Entry>(count: count)
        var chunks = ParallelMap.chunks(count: count) { range in
            var pairs = CellPairs()
            pairs.keys.reserveCapacity(range.count * 2)
            pairs.owners.reserveCapacity(range.count * 2)
            for i in range {
                let (box, entry) = describe(i)
                compact.set(i, to: entry)
                let level = Self.level(forExtent: max(box.lonSpan, box.maxLat - box.minLat))
                pairs.levels |= 1 << UInt64(level)
                Self.forEachCell(of: box, level: level) { key in
                    // Written as loops over explicit shifts: a closed-range loop around the key
                    // arithmetic was miscompiled in release builds (keys lost their level and
                    // column), which would silently hide fences. A wrong key must stop the build.
                    precondition(key >> 56 == UInt64(level), "spatial index key corrupted")
                    pairs.keys.append(key)
                    pairs.owners.append(Int32(i))
                }
            }
            return pairs
        }
        let usedLevels = chunks.reduce(0) { $0 | $1.levels }
        levels = (0...Self.finestLevel).filter { usedLevels & (1 << UInt64($0)) != 0 }
        let sorted = CellPairs.sortedByHash(&chunks)
        let n = sorted.keys.count
        var cells = 0
        for i in 0..<n where i == 0 || sorted.keys[i] != sorted.keys[i - 1] { cells += 1 }
        // At most half full: a miss ends at the first empty slot, usually the next one.
        let capacity = max(16, cells * 2)
        var slots = [Slot](repeating: Slot(key: .max, start: 0, count: 0), count: capacity)
        let entries = [Entry](unsafeUninitializedCapacity: n) { entries, initialized in
            for i in 0..<n { entries[i] = compact[Int(sorted.owners[i])] }
            initialized = n
        }
        var i = 0
        while i < n {
            let key = sorted.keys[i]
            var j = i + 1
            while j < n, sorted.keys[j] == key { j += 1 }
            var s = Self.home(of: key, capacity: capacity)
            while slots[s].key != .max {
                s += 1
                if s == capacity { s = 0 }
            }
            slots[s] = Slot(key: key, start: Int32(i), count: Int32(j - i))
            i = j
        }
        self.slots = slots
        self.entries = entries
    }

    /// The entry range of one cell, empty when the cell holds nothing.
    @inline(__always)
    func range(of key: UInt64) -> Range<Int> {
        slots.withUnsafeBufferPointer { slots in
            var s = Self.home(of: key, capacity: slots.count)
            while true {
                let found = slots[s]
                if found.key == key { return Int(found.start)..<Int(found.start + found.count) }
                if found.key == .max { return 0..<0 }
                s += 1
                if s == slots.count { s = 0 }
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

/// (cell key, entry) pairs of the index while it is built.
private struct CellPairs {
    var keys: [UInt64] = []
    var owners: [Int32] = []
    /// Bit k set: some box went to level k.
    var levels: UInt64 = 0

    /// Bits of the hash the pairs are sorted by.
    static let sortBits = 22

    /// All pairs, ordered by the top bits of their key's hash, and pairs of one key
    /// next to each other. A least-significant-digit radix sort, 11 bits a pass, so
    /// that every pass writes to few enough places at once to stay in the cache.
    /// Empties `chunks` as it goes, to free their memory.
    static func sortedByHash(_ chunks: inout [CellPairs]) -> CellPairs {
        let n = chunks.reduce(0) { $0 + $1.keys.count }
        let digitBits = 11
        let radix = 1 << digitBits
        func prefix(_ key: UInt64) -> Int { Int(truncatingIfNeeded: GridIndex.hash(key) >> UInt64(64 - sortBits)) }
        var sources = chunks
        chunks = []
        var result = CellPairs()
        for pass in 0..<(sortBits / digitBits) {
            let shift = pass * digitBits
            func digit(_ key: UInt64) -> Int { (prefix(key) >> shift) & (radix - 1) }
            var starts = [Int](repeating: 0, count: radix + 1)
            for source in sources {
                for key in source.keys { starts[digit(key) + 1] += 1 }
            }
            for d in 0..<radix { starts[d + 1] += starts[d] }
            var keys = [UInt64](repeating: 0, count: n)
            var owners = [Int32](repeating: 0, count: n)
            keys.withUnsafeMutableBufferPointer { keys in
                owners.withUnsafeMutableBufferPointer { owners in
                    for source in sources {
                        for (key, owner) in zip(source.keys, source.owners) {
                            let d = digit(key)
                            keys[starts[d]] = key
                            owners[starts[d]] = owner
                            starts[d] += 1
                        }
                    }
                }
            }
            sources = []
            result = CellPairs(keys: keys, owners: owners)
            sources = [result]
        }
        // Keys that share those bits may still be interleaved: put each key's pairs together.
        result.keys.withUnsafeMutableBufferPointer { keys in
            result.owners.withUnsafeMutableBufferPointer { owners in
                var i = 0
                while i < n {
                    let bits = prefix(keys[i])
                    var j = i + 1
                    while j < n, prefix(keys[j]) == bits { j += 1 }
                    if j - i > 1 {
                        // Insertion sort by key: runs are a few pairs long.
                        for k in (i + 1)..<j {
                            let key = keys[k], owner = owners[k]
                            var m = k - 1
                            while m >= i, keys[m] > key {
                                keys[m + 1] = keys[m]
                                owners[m + 1] = owners[m]
                                m -= 1
                            }
                            keys[m + 1] = key
                            owners[m + 1] = owner
                        }
                    }
                    i = j
                }
            }
        }
        return result
    }
}
