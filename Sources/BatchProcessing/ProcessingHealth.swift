import Metrics
import NIOConcurrencyHelpers
import ServiceSupport

/// What a consumer's failures tell operators: `/ready` turns 503 for a component
/// while attempts fail because of it, and back once one succeeds; counters say how
/// often that happened and how many records were set aside.
///
/// Metric names follow the service: `checkin_<service>_transient_failures_total{component}`,
/// `checkin_<service>_poison_records_total`, `checkin_<service>_dead_letters_total{reason="poison"}`.
package final class ProcessingHealth: Sendable {
    let service: String
    let readiness: Readiness?
    private let failing = NIOLockedValueBox<Set<String>>([])
    private let poisonRecords: Counter
    private let poisonDeadLetters: Counter

    package init(service: String, readiness: Readiness?) {
        self.service = service
        self.readiness = readiness
        self.poisonRecords = Counter(label: "checkin_\(service)_poison_records_total")
        self.poisonDeadLetters = Counter(
            label: "checkin_\(service)_dead_letters_total", dimensions: [("reason", "poison")])
        // Exported at zero from the start, so that alerts and dashboards see the series.
        for component in ["database", "broker", "processing"] {
            Counter(label: "checkin_\(service)_transient_failures_total", dimensions: [("component", component)])
                .increment(by: 0)
        }
        poisonRecords.increment(by: 0)
        poisonDeadLetters.increment(by: 0)
    }

    /// The readiness source these reports are filed under, beside others for the same
    /// component (the broker probe's, the other service's in `checkin dev`).
    var readinessSource: String { "\(service) processing" }

    func failedTransiently(component: String) {
        Counter(label: "checkin_\(service)_transient_failures_total", dimensions: [("component", component)]).increment()
        let isNew = failing.withLockedValue { $0.insert(component).inserted }
        if isNew { readiness?.set(component, ready: false, source: readinessSource) }
    }

    func succeeded() {
        let recovered = failing.withLockedValue { failing in
            defer { failing.removeAll() }
            return failing
        }
        for component in recovered { readiness?.set(component, ready: true, source: readinessSource) }
    }

    /// A component found answering again by other means than a successful attempt (a
    /// worker out of its group makes none).
    package func recovered(component: String) {
        let wasFailing = failing.withLockedValue { $0.remove(component) != nil }
        if wasFailing { readiness?.set(component, ready: true, source: readinessSource) }
    }

    func deadLettered() {
        poisonRecords.increment()
        poisonDeadLetters.increment()
    }

    /// Components failing right now (for tests and logs).
    package var failingComponents: Set<String> {
        failing.withLockedValue { $0 }
    }
}
