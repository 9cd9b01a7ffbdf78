import Dispatch

/// Builds run off the hot path but still decide how quickly new zones take effect;
/// the per-fence work (validation, shapes, enclosing circles) is independent, so it
/// is spread over the machine's cores.
enum ParallelMap {
    /// Elements handed to one worker at a time: large enough that scheduling costs
    /// nothing, small enough that the cores finish together.
    static let chunkSize = 1_024

    /// `transform(i)` for every i in 0..<count, in order, computed on all cores.
    static func map<T>(count: Int, _ transform: (Int) -> T) -> [T] {
        guard count > 2 * chunkSize else { return (0..<count).map(transform) }
        return [T](unsafeUninitializedCapacity: count) { buffer, initialized in
            let output = UnsafeSendable(buffer)
            withoutActuallyEscaping(transform) { transform in
                let work = UnsafeSendable(transform)
                DispatchQueue.concurrentPerform(iterations: chunkCount(count)) { c in
                    for i in chunkRange(c, count: count) {
                        (output.value.baseAddress! + i).initialize(to: work.value(i))
                    }
                }
            }
            initialized = count
        }
    }

    /// `body` over consecutive ranges that together cover 0..<count, on all cores;
    /// returns each range's result in order. A range's work can keep scratch memory
    /// for all its elements, and hand back the few results that are not one per element.
    static func chunks<R>(count: Int, _ body: (Range<Int>) -> R) -> [R] {
        let chunks = chunkCount(count)
        guard count > 2 * chunkSize else { return (0..<chunks).map { body(chunkRange($0, count: count)) } }
        return [R](unsafeUninitializedCapacity: chunks) { buffer, initialized in
            let output = UnsafeSendable(buffer)
            withoutActuallyEscaping(body) { body in
                let work = UnsafeSendable(body)
                DispatchQueue.concurrentPerform(iterations: chunks) { c in
                    (output.value.baseAddress! + c).initialize(to: work.value(chunkRange(c, count: count)))
                }
            }
            initialized = chunks
        }
    }

    private static func chunkCount(_ count: Int) -> Int { (count + chunkSize - 1) / chunkSize }

    private static func chunkRange(_ c: Int, count: Int) -> Range<Int> {
        (c * chunkSize)..<min(count, (c + 1) * chunkSize)
    }
}

/// Hands a buffer or closure to worker threads that each touch disjoint elements.
private struct UnsafeSendable<Value>: @unchecked Sendable {
    var value: Value
    init(_ value: Value) { self.value = value }
}
