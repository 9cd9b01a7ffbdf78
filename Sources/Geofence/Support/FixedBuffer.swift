/// A run of plain values allocated once at its final size, written once while the
/// engine is built (by several threads at a time, each to its own elements) and only
/// read after that.
///
/// The engine's big tables (polygon vertices, compiled fences) live in these rather
/// than in arrays so that a parallel build can write every element in place: no
/// per-thread copies to concatenate, no second copy at the peak, and no
/// copy-on-write or bounds checks on the hot path once it is built.
final class FixedBuffer<Element: BitwiseCopyable>: RandomAccessCollection, @unchecked Sendable {
    let base: UnsafeMutablePointer<Element>
    let count: Int

    /// Uninitialised memory for `count` elements; every one must be written before it is read.
    init(count: Int) {
        self.count = count
        base = .allocate(capacity: Swift.max(1, count))
    }

    convenience init(_ elements: some Collection<Element>) {
        self.init(count: elements.count)
        var i = 0
        for element in elements {
            base[i] = element
            i += 1
        }
    }

    deinit { base.deallocate() }

    var startIndex: Int { 0 }
    var endIndex: Int { count }

    @inline(__always)
    subscript(position: Int) -> Element {
        assert(position >= 0 && position < count, "index out of range")
        return base[position]
    }

    /// Sets one element; only while the engine is being built, one writer per element.
    @inline(__always)
    func set(_ position: Int, to value: Element) {
        assert(position >= 0 && position < count, "index out of range")
        base[position] = value
    }
}
