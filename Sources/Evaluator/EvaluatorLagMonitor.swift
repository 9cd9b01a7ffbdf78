import Foundation
import Kafka
import Logging
import Metrics
import Persistence
import ServiceLifecycle
import ServiceSupport

/// How far the evaluators are behind on `checkin.fixes`, measured from the offsets
/// they own: those in Postgres (`consumer_offsets`), committed with the states they
/// produced, against the broker's end offsets.
package struct FixLag: Sendable {
    package var partitions: [KafkaPartitionLag]
    /// The record time of the oldest fix not yet processed, if any is waiting.
    package var oldestUnprocessedFix: Date?

    package var records: Int64 { partitions.reduce(0) { $0 + $1.records } }

    /// Reads the lag of `group` on `topic`; `now` only bounds the records' timestamps.
    package static func read(reader: KafkaOffsetReader, offsets: OffsetStore, group: String, topic: String) async throws
        -> FixLag
    {
        let partitions = try await reader.lag(topic: topic) { partitions in
            try await offsets.nextOffsets(group: group, topic: topic, partitions: partitions)
        }
        var oldest: Date?
        for lag in partitions {
            guard let offset = lag.firstUnprocessedOffset else { continue }
            if let stamp = try await reader.timestamp(topic: topic, partition: lag.partition.partition, offset: offset) {
                oldest = min(oldest ?? stamp, stamp)
            }
        }
        return FixLag(partitions: partitions, oldestUnprocessedFix: oldest)
    }
}

/// Exports the evaluators' lag every `interval`:
/// `checkin_evaluator_consumer_lag_records{topic,partition}` and
/// `checkin_evaluator_oldest_unprocessed_fix_age_seconds`. Every evaluator reports
/// every partition (the offsets are shared in Postgres), so dashboards take the max.
package final class EvaluatorLagMonitor: Service, Sendable {
    let bootstrapServers: String
    let properties: [String: String]
    let offsets: OffsetStore
    let group: String
    let topic: String
    let interval: Duration
    let logger: Logger
    let lag = GaugeFamily(name: "checkin_evaluator_consumer_lag_records")
    let oldestFixAge = Gauge(label: "checkin_evaluator_oldest_unprocessed_fix_age_seconds")

    package init(
        bootstrapServers: String, properties: [String: String] = [:], offsets: OffsetStore, group: String, topic: String,
        interval: Duration = .seconds(10), logger: Logger
    ) {
        self.bootstrapServers = bootstrapServers
        self.properties = properties
        self.offsets = offsets
        self.group = group
        self.topic = topic
        self.interval = interval
        self.logger = logger
    }

    package func run() async throws {
        let reader = try KafkaOffsetReader(bootstrapServers: bootstrapServers, properties: properties, logger: logger)
        var failing = false
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            do {
                // A reading waiting on an unreachable database must not hold up a shutdown.
                let reading = try await cancelWhenGracefulShutdown { [reader, offsets, group, topic] in
                    try await FixLag.read(reader: reader, offsets: offsets, group: group, topic: topic)
                }
                lag.update(
                    reading.partitions.map {
                        .init(
                            labels: [("topic", $0.partition.topic), ("partition", String($0.partition.partition))],
                            value: Double($0.records))
                    })
                oldestFixAge.record(reading.oldestUnprocessedFix.map { max(Date().timeIntervalSince($0), 0) } ?? 0)
                failing = false
            } catch {
                // The last values stay: readiness and the broker probe say when the broker is away.
                if !failing { logger.warning("could not measure the fixes' lag", metadata: ["error": "\(error)"]) }
                failing = true
            }
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: self.interval) }
        }
    }
}
