import Foundation
import Kafka
import Logging
import Persistence
import ServiceLifecycle
import ServiceSupport

/// Exports, every `interval`, what the notifier has not done yet:
/// - `checkin_notifier_consumer_lag_records{topic,partition}`: event records not yet
///   turned into deliveries, from the offsets the notifier commits to its group
///   against the broker's end offsets;
/// - `checkin_notifier_delivery_backlog{project,endpoint,state}`: deliveries
///   `pending` (not attempted yet), `retrying` and `failed` (out of attempts);
/// - `checkin_notifier_endpoint_enabled{project,endpoint}`: 1, or 0 once disabled.
/// Every notifier reports the same figures, so dashboards take the max.
public final class NotifierMonitor: Service, Sendable {
    let bootstrapServers: String
    let properties: [String: String]
    let group: String
    let topics: [String]
    let operations: OperationsStore
    let interval: Duration
    let logger: Logger
    let lag = GaugeFamily(name: "checkin_notifier_consumer_lag_records")
    let backlog = GaugeFamily(name: "checkin_notifier_delivery_backlog")
    let endpointEnabled = GaugeFamily(name: "checkin_notifier_endpoint_enabled")

    public init(
        bootstrapServers: String, properties: [String: String] = [:], group: String, topics: [String],
        operations: OperationsStore, interval: Duration = .seconds(10), logger: Logger
    ) {
        self.bootstrapServers = bootstrapServers
        self.properties = properties
        self.group = group
        self.topics = topics
        self.operations = operations
        self.interval = interval
        self.logger = logger
    }

    public func run() async throws {
        let reader = try KafkaOffsetReader(
            bootstrapServers: bootstrapServers, group: group, properties: properties, logger: logger)
        var failing: Set<String> = []
        func attempt(_ what: String, _ body: @escaping @Sendable () async throws -> Void) async {
            do {
                // A reading waiting on an unreachable database must not hold up a shutdown.
                try await cancelWhenGracefulShutdown { try await body() }
                failing.remove(what)
            } catch {
                if failing.insert(what).inserted {
                    logger.warning("could not measure \(what)", metadata: ["error": "\(error)"])
                }
            }
        }
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            await attempt("the events' lag") { [self] in
                var samples: [GaugeFamily.Sample] = []
                for topic in topics {
                    let partitions = try await reader.lag(topic: topic) { try await reader.committedOffsets(topic: topic, partitions: $0) }
                    samples += partitions.map {
                        .init(labels: [("topic", topic), ("partition", String($0.partition.partition))], value: Double($0.records))
                    }
                }
                lag.update(samples)
            }
            await attempt("the delivery backlog") { [self] in
                let endpoints = try await operations.deliveryBacklog()
                backlog.update(
                    endpoints.flatMap { endpoint in
                        [("pending", endpoint.pending), ("retrying", endpoint.retrying), ("failed", endpoint.failed)].map {
                            .init(
                                labels: [("project", endpoint.projectId), ("endpoint", endpoint.endpointId), ("state", $0.0)],
                                value: Double($0.1))
                        }
                    })
                endpointEnabled.update(
                    endpoints.map {
                        .init(labels: [("project", $0.projectId), ("endpoint", $0.endpointId)], value: $0.enabled ? 1 : 0)
                    })
            }
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: self.interval) }
        }
    }
}
