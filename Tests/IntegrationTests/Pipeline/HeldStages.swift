import NIOConcurrencyHelpers
import ServiceLifecycle

/// Stages of a test pipeline that start only when the test lets them, so that a test can
/// leave work where it is (fixes on their topic, events on theirs) while it acts.
final class HeldStages: Sendable {
    enum Stage: Sendable, Hashable {
        case evaluator
        case notifier
    }

    private let released = NIOLockedValueBox<Set<Stage>>([])
    private let waiters = NIOLockedValueBox<[Stage: [AsyncStream<Void>.Continuation]]>([:])
    let held: Set<Stage>

    init(_ held: Set<Stage> = []) {
        self.held = held
    }

    /// Lets `stage` start.
    func release(_ stage: Stage) {
        released.withLockedValue { _ = $0.insert(stage) }
        for waiter in waiters.withLockedValue({ $0.removeValue(forKey: stage) ?? [] }) { waiter.finish() }
    }

    /// Returns once `stage` may start; false when the pipeline stops first.
    func waitUntilReleased(_ stage: Stage) async -> Bool {
        guard held.contains(stage) else { return true }
        let (stream, continuation) = AsyncStream.makeStream(of: Void.self)
        let isReleased = released.withLockedValue { released in
            if released.contains(stage) { return true }
            waiters.withLockedValue { $0[stage, default: []].append(continuation) }
            return false
        }
        if isReleased { return true }
        for await _ in stream.cancelOnGracefulShutdown() {}
        return released.withLockedValue { $0.contains(stage) } && !Task.isShuttingDownGracefully && !Task.isCancelled
    }

    /// `service`, started once `stage` is released.
    func gate(_ service: any Service, as stage: Stage) -> any Service {
        held.contains(stage) ? HeldService(inner: service, stage: stage, stages: self) : service
    }
}

private struct HeldService: Service {
    let inner: any Service
    let stage: HeldStages.Stage
    let stages: HeldStages

    func run() async throws {
        guard await stages.waitUntilReleased(stage) else { return }
        try await inner.run()
    }
}
