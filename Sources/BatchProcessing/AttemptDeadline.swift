import NIOConcurrencyHelpers
import ServiceLifecycle

/// Whether an attempt may still commit, decided once: by the attempt claiming its commit
/// (``claimCommit()``, right before it commits) or by its time-out being declared,
/// whichever comes first.
///
/// ``withTimeout(_:component:drainAfterShutdown:_:)`` returns when the limit passes even
/// if the body goes on (a query blocked on a lock does not heed cancellation). Such a
/// body must not commit afterwards: its batch is retried, or split, from the committed
/// offsets, and a late commit would land under work already given up. A body that asks
/// to commit after the time-out was declared is refused (its transaction rolls back);
/// a time-out that comes while a body is committing waits for that commit, one round trip.
package final class AttemptDeadline: Sendable {
    private enum State {
        case running, committing, expired
    }

    @TaskLocal static var current: AttemptDeadline?

    private let state = NIOLockedValueBox(State.running)
    let component: String
    let limit: Duration

    init(component: String, limit: Duration) {
        self.component = component
        self.limit = limit
    }

    /// Called by an attempt's body right before its transaction commits; throws
    /// ``AttemptTimedOut`` if the attempt's time-out was declared, so that the transaction
    /// rolls back instead. Outside ``withTimeout(_:component:drainAfterShutdown:_:)``, does nothing.
    package static func claimCommit() throws {
        guard let deadline = current else { return }
        let claimed = deadline.state.withLockedValue { state in
            guard state != .expired else { return false }
            state = .committing
            return true
        }
        if !claimed { throw AttemptTimedOut(component: deadline.component, limit: deadline.limit) }
    }

    /// True when the attempt is given up now; false when its body is committing already.
    func expire() -> Bool {
        state.withLockedValue { state in
            guard state == .running else { return state == .expired }
            state = .expired
            return true
        }
    }
}

/// The first of several racing outcomes, handed to whoever waits for it.
private final class FirstOutcome<Value: Sendable>: Sendable {
    private struct State {
        var result: Result<Value, any Error>?
        var waiter: CheckedContinuation<Value, any Error>?
    }

    private let state = NIOLockedValueBox(State())

    func wait(_ continuation: CheckedContinuation<Value, any Error>) {
        let decided = state.withLockedValue { state -> Result<Value, any Error>? in
            if let result = state.result { return result }
            state.waiter = continuation
            return nil
        }
        if let decided { continuation.resume(with: decided) }
    }

    func settle(_ result: Result<Value, any Error>) {
        let waiter = state.withLockedValue { state -> CheckedContinuation<Value, any Error>? in
            guard state.result == nil else { return nil }
            state.result = result
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(with: result)
    }
}

/// Runs `body`, failing with ``AttemptTimedOut`` if it takes longer than `limit`, and
/// with ``AttemptAbandoned`` if the process is asked to stop and `body` has not finished
/// `drainAfterShutdown` later. Either way it returns then, whether or not the body heeds
/// its cancellation, and the body may no longer commit (see ``AttemptDeadline``); only a
/// body already committing is waited for.
package func withTimeout<Result: Sendable>(
    _ limit: Duration, component: String = AttemptTimedOut.unknownComponent, drainAfterShutdown: Duration? = nil,
    _ body: @escaping @Sendable () async throws -> Result
) async throws -> Result {
    let deadline = AttemptDeadline(component: component, limit: limit)
    let outcome = FirstOutcome<Result>()
    let work = Task { try await AttemptDeadline.$current.withValue(deadline) { try await body() } }
    let finished = Task {
        let result = await work.result
        outcome.settle(result)
    }
    let timer = Task {
        try await Task.sleep(for: limit)
        guard deadline.expire() else { return }
        outcome.settle(.failure(AttemptTimedOut(component: component, limit: limit)))
        work.cancel()
    }
    let drain = Task {
        guard let drainAfterShutdown else { return }
        try await gracefulShutdown()
        try await Task.sleep(for: drainAfterShutdown)
        guard deadline.expire() else { return }
        outcome.settle(.failure(AttemptAbandoned()))
        work.cancel()
    }
    defer {
        timer.cancel()
        drain.cancel()
    }
    _ = finished
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { outcome.wait($0) }
    } onCancel: {
        work.cancel()
        if deadline.expire() { outcome.settle(.failure(CancellationError())) }
    }
}
