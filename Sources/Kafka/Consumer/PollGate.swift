import Foundation

/// Holds the poll thread while the application has enough batches buffered,
/// and releases it at once when the consumer is asked to stop.
final class PollGate: @unchecked Sendable {
    /// `@unchecked`: both flags are only touched with `condition` locked.
    private let condition = NSCondition()
    private var demand = true
    private var stopped = false

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

    var isStopped: Bool {
        condition.lock()
        defer { condition.unlock() }
        return stopped
    }

    /// Waits until batches are wanted; false when the consumer should stop instead.
    func waitForDemand() -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while !demand && !stopped { condition.wait() }
        return !stopped
    }
}
