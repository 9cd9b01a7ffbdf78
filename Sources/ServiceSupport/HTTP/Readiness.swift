import Metrics
import NIOConcurrencyHelpers

/// What `/ready` reports: each component says whether it can do its work now
/// (connected to Postgres, joined the consumer group, …). Each component is also
/// exported as the gauge `checkin_ready{component}` (1 ready, 0 not), so that
/// Prometheus can alert on a service that stays unready.
public final class Readiness: Sendable {
    private let components = NIOLockedValueBox<[String: Bool]>([:])

    public init() {}

    public func set(_ component: String, ready: Bool) {
        components.withLockedValue { components in
            components[component] = ready
            // Under the lock, so that the gauge ends with the last value set, as `/ready` does.
            Gauge(label: "checkin_ready", dimensions: [("component", component)]).record(ready ? 1 : 0)
        }
    }

    /// Ready when at least one component registered and all are ready.
    public var isReady: Bool {
        components.withLockedValue { !$0.isEmpty && $0.values.allSatisfy { $0 } }
    }

    public var report: [String: Bool] {
        components.withLockedValue { $0 }
    }
}
