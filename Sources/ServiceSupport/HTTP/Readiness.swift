import NIOConcurrencyHelpers

/// What `/ready` reports: each component says whether it can do its work now
/// (connected to Postgres, joined the consumer group, …).
public final class Readiness: Sendable {
    private let components = NIOLockedValueBox<[String: Bool]>([:])

    public init() {}

    public func set(_ component: String, ready: Bool) {
        components.withLockedValue { $0[component] = ready }
    }

    /// Ready when at least one component registered and all are ready.
    public var isReady: Bool {
        components.withLockedValue { !$0.isEmpty && $0.values.allSatisfy { $0 } }
    }

    public var report: [String: Bool] {
        components.withLockedValue { $0 }
    }
}
