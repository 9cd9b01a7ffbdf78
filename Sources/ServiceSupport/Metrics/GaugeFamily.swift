import Metrics
import NIOConcurrencyHelpers

/// The gauges of one metric name whose label sets come and go (partitions, webhook
/// endpoints). Each ``update(_:)`` states every series there is now; series not in it
/// are removed, so that a deleted endpoint does not export its last value forever.
package final class GaugeFamily: Sendable {
    package struct Sample: Sendable {
        package var labels: [(String, String)]
        package var value: Double

        package init(labels: [(String, String)], value: Double) {
            self.labels = labels
            self.value = value
        }
    }

    package let name: String
    private let gauges = NIOLockedValueBox<[[String]: Gauge]>([:])

    package init(name: String) {
        self.name = name
    }

    /// Sets the family to exactly these series.
    package func update(_ samples: [Sample]) {
        gauges.withLockedValue { gauges in
            var next: [[String]: Gauge] = [:]
            for sample in samples {
                let key = sample.labels.flatMap { [$0.0, $0.1] }
                let gauge = gauges[key] ?? next[key] ?? Gauge(label: name, dimensions: sample.labels)
                gauge.record(sample.value)
                next[key] = gauge
            }
            for (key, gauge) in gauges where next[key] == nil { gauge.destroy() }
            gauges = next
        }
    }
}
