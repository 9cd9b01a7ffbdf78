import Synchronization

/// Which of a load's requests (batches, by index) have been answered, so that a request can
/// wait for those holding its devices' previous fixes (`--in-order`): requests in flight
/// together, or one sent again to another ingest, could otherwise reach the broker out of
/// order, and a fix after its successor is late and decides nothing.
final class RequestOrder: Sendable {
    private struct State {
        /// Batches 0..<answeredPrefix are all answered.
        var answeredPrefix = 0
        var answeredBeyond: Set<Int> = []
        var waiters: [(batch: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state = Mutex(State())

    /// Returns once batch `batch` and every one before it are answered.
    func waitUntilAnswered(through batch: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { state -> Bool in
                if state.answeredPrefix > batch { return true }
                state.waiters.append((batch, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    /// Batch `batch` is answered (or failed, which ends the run: its waiters go on to be cancelled).
    func answered(_ batch: Int) {
        let ready = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.answeredBeyond.insert(batch)
            while state.answeredBeyond.remove(state.answeredPrefix) != nil { state.answeredPrefix += 1 }
            let prefix = state.answeredPrefix
            let ready = state.waiters.filter { $0.batch < prefix }.map(\.continuation)
            state.waiters.removeAll { $0.batch < prefix }
            return ready
        }
        for continuation in ready { continuation.resume() }
    }
}

/// Requests sent again because an ingest did not take them.
final class RetryTally: Sendable {
    private let value = Mutex(0)

    func add() {
        value.withLock { $0 += 1 }
    }

    var count: Int { value.withLock { $0 } }
}
