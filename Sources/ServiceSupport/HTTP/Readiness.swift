import NIOConcurrencyHelpers

/// What `/ready` reports: each component says whether it can do its work now
/// (connected to Postgres, joined the consumer group, …).
///
/// A component can be judged by several sources (the broker probe that asks for
/// metadata, and the pipeline whose writes to the broker fail): it is ready only
/// while every source says so, so no source's good news hides another's bad news.
public final class Readiness: Sendable {
    private let components = NIOLockedValueBox<[String: [String: Bool]]>([:])

    public init() {}

    public func set(_ component: String, ready: Bool, source: String = "") {
        components.withLockedValue { $0[component, default: [:]][source] = ready }
    }

    /// Ready when at least one component registered and all are ready.
    public var isReady: Bool {
        components.withLockedValue { components in
            !components.isEmpty && components.values.allSatisfy { $0.values.allSatisfy { $0 } }
        }
    }

    public var report: [String: Bool] {
        components.withLockedValue { components in components.mapValues { $0.values.allSatisfy { $0 } } }
    }
}
