import Kafka
import Logging
import Metrics
import ServiceLifecycle
import ServiceSupport

/// Tells `/ready` the truth about a worker that holds partitions but does not move
/// them: a partition with records waiting (its high watermark is past what was
/// processed) whose processed offset has not moved for `stallAfter` (the consumer's
/// max.poll.interval) marks the `partitions` component not ready until it moves.
final class PartitionStallWatchdog: Service, Sendable {
    let consumer: KafkaConsumer
    let leases: PartitionLeases
    let readiness: Readiness?
    let stallAfter: Duration
    let interval: Duration
    let logger: Logger
    let stalledGauge = Gauge(label: "checkin_evaluator_partitions_stalled")

    init(
        consumer: KafkaConsumer, leases: PartitionLeases, readiness: Readiness?, stallAfter: Duration, logger: Logger
    ) {
        self.consumer = consumer
        self.leases = leases
        self.readiness = readiness
        self.stallAfter = stallAfter
        self.interval = min(.seconds(5), stallAfter / 4)
        self.logger = logger
        stalledGauge.record(0)
        readiness?.set("partitions", ready: true)
    }

    func run() async throws {
        var reported: Set<KafkaTopicPartition> = []
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            let stalled = stalledPartitions(now: .now)
            if stalled != reported {
                if !stalled.isEmpty {
                    logger.error(
                        "partitions have records waiting but have not moved",
                        metadata: ["partitions": "\(stalled.map(\.description).sorted())", "for": "\(stallAfter)"])
                } else {
                    logger.info("no partition is stalled any more")
                }
                reported = stalled
            }
            stalledGauge.record(stalled.count)
            readiness?.set("partitions", ready: stalled.isEmpty)
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: self.interval) }
        }
    }

    func stalledPartitions(now: ContinuousClock.Instant) -> Set<KafkaTopicPartition> {
        var stalled: Set<KafkaTopicPartition> = []
        for (partition, lease) in leases.snapshot where now - lease.movedAt >= stallAfter {
            guard let watermarks = consumer.cachedWatermarks(of: partition) else { continue }
            let processed = lease.nextOffset ?? watermarks.low
            if watermarks.high > processed { stalled.insert(partition) }
        }
        return stalled
    }
}
