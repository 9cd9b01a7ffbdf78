import Foundation

/// Tells the poll thread whether the application wants more batches, and
/// releases it at once when the consumer is asked to stop.
final class PollGate: @unchecked Sendable {
    /// `@unchecked`: both flags are only touched with `condition` locked.
    private let condition = NSCondition()
    private var demand = true
    private var stopped = false
    private var nudged = false

    func setDemand(_ value: Bool) {
        condition.lock()
        demand = value
        condition.broadcast()
        condition.unlock()
    }

    func stop() {
        condition.lock()
        stopped = true
        condition.broadcast()
        condition.unlock()
    }

    /// Wakes the poll thread for something other than demand (a listener returned).
    func nudge() {
        condition.lock()
        nudged = true
        condition.broadcast()
        condition.unlock()
    }

    var isStopped: Bool {
        condition.lock()
        defer { condition.unlock() }
        return stopped
    }

    enum Demand {
        /// The application wants batches.
        case wanted
        /// It has enough for now.
        case satisfied
        /// The consumer should stop.
        case stopped
        /// Woken by `nudge()` while batches are not wanted.
        case nudged
    }

    /// Waits up to `limit` for batches to be wanted.
    func waitForDemand(upTo limit: Duration) -> Demand {
        let deadline = Date(timeIntervalSinceNow: Double(limit.components.seconds) + Double(limit.components.attoseconds) * 1e-18)
        condition.lock()
        defer { condition.unlock() }
        while !demand && !stopped && !nudged {
            if !condition.wait(until: deadline) { break }
        }
        if stopped { return .stopped }
        if demand { return .wanted }
        if nudged {
            nudged = false
            return .nudged
        }
        return .satisfied
    }
}
