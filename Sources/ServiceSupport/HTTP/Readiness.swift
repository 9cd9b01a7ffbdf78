import Metrics
import NIOConcurrencyHelpers

/// What `/ready` reports: each component says whether it can do its work now
/// (connected to Postgres, joined the consumer group, …).
///
/// A component can be judged by several sources (the broker probe that asks for
/// metadata, and the pipeline whose writes to the broker fail): it is ready only
/// while every source says so, so no source's good news hides another's bad news.
///
/// Each component is also exported as the gauge `checkin_ready{component}` (1 ready,
/// 0 not), so that Prometheus can alert on a service that stays unready.
package final class Readiness: Sendable {
    private let components = NIOLockedValueBox<[String: [String: Bool]]>([:])
    /// The parts of the pipeline this process runs (`ingest`, `evaluator`, `notifier`), so
    /// that `checkin status` can tell one `checkin dev` from three services.
    package let serves: [String]

    package init(serves: [String] = []) {
        self.serves = serves
    }

    package func set(_ component: String, ready: Bool, source: String = "") {
        components.withLockedValue { components in
            components[component, default: [:]][source] = ready
            let combined = components[component, default: [:]].values.allSatisfy { $0 }
            // Under the lock, so that the gauge ends with the last value set, as `/ready` does.
            Gauge(label: "checkin_ready", dimensions: [("component", component)]).record(combined ? 1 : 0)
        }
    }

    /// Ready when at least one component registered and all are ready.
    package var isReady: Bool {
        components.withLockedValue { components in
            !components.isEmpty && components.values.allSatisfy { $0.values.allSatisfy { $0 } }
        }
    }

    package var report: [String: Bool] {
        components.withLockedValue { components in components.mapValues { $0.values.allSatisfy { $0 } } }
    }
}
