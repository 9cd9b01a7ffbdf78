import Metrics
import NIOConcurrencyHelpers

/// The gauges of one metric name whose label sets come and go (partitions, webhook
/// endpoints). Each ``update(_:)`` states every series there is now; series not in it
/// are removed, so that a deleted endpoint does not export its last value forever.
public final class GaugeFamily: Sendable {
    public struct Sample: Sendable {
        public var labels: [(String, String)]
        public var value: Double

        public init(labels: [(String, String)], value: Double) {
            self.labels = labels
            self.value = value
        }
    }

    public let name: String
    private let gauges = NIOLockedValueBox<[[String]: Gauge]>([:])

    public init(name: String) {
        self.name = name
    }

    /// Sets the family to exactly these series.
    public func update(_ samples: [Sample]) {
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
