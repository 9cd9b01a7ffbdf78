import Dispatch

/// Builds run off the hot path but still decide how quickly new zones take effect;
/// the per-fence work (validation, shapes, enclosing circles) is independent, so it
/// is spread over the machine's cores.
enum ParallelMap {
    /// `transform(i)` for every i in 0..<count, in order, computed on all cores.
    static func map<T>(count: Int, _ transform: (Int) -> T) -> [T] {
        guard count > 2_048 else { return (0..<count).map(transform) }
        let chunk = 1_024
        let chunks = (count + chunk - 1) / chunk
        var results = [T?](repeating: nil, count: count)
        results.withUnsafeMutableBufferPointer { buffer in
            let output = UnsafeSendable(buffer)
            withoutActuallyEscaping(transform) { transform in
                let work = UnsafeSendable(transform)
                DispatchQueue.concurrentPerform(iterations: chunks) { c in
                    for i in (c * chunk)..<min(count, (c + 1) * chunk) {
                        output.value[i] = work.value(i)
                    }
                }
            }
        }
        return results.map { $0! }
    }
}

/// Hands a buffer or closure to worker threads that each touch disjoint elements.
private struct UnsafeSendable<Value>: @unchecked Sendable {
    var value: Value
    init(_ value: Value) { self.value = value }
}
