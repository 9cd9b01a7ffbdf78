import CoreMetrics
import Metrics
import NIOConcurrencyHelpers
import Prometheus

/// The process's one Prometheus registry. swift-metrics can be bootstrapped only
/// once per process, so every service (and `checkin dev`, which runs them all)
/// goes through here.
package enum MetricsBootstrap {
    private static let state = NIOLockedValueBox<PrometheusCollectorRegistry?>(nil)

    /// Bootstraps swift-metrics on first call; returns the registry every call.
    @discardableResult
    package static func prometheus() -> PrometheusCollectorRegistry {
        state.withLockedValue { registry in
            if let registry { return registry }
            let created = PrometheusCollectorRegistry()
            var factory = PrometheusMetricsFactory(registry: created)
            factory.defaultDurationHistogramBuckets = [
                .milliseconds(1), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
                .milliseconds(75), .milliseconds(100), .milliseconds(150), .milliseconds(200), .milliseconds(250),
                .milliseconds(300), .milliseconds(400), .milliseconds(500), .milliseconds(750), .seconds(1), .seconds(2),
                .seconds(5), .seconds(10), .seconds(30),
            ]
            MetricsSystem.bootstrap(factory)
            registry = created
            return created
        }
    }
}
