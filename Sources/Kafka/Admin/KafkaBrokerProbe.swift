import Logging
import ServiceLifecycle

/// Asks the broker for its metadata every `interval` and reports each change between
/// answering and not answering, so that a readiness check follows the broker for as
/// long as the process runs, not only at start-up.
package final class KafkaBrokerProbe: Service, Sendable {
    let bootstrapServers: String
    /// The connection's librdkafka properties (TLS, SASL).
    let properties: [String: String]
    let interval: Duration
    let timeout: Duration
    let logger: Logger
    let onChange: @Sendable (_ reachable: Bool) -> Void

    package init(
        bootstrapServers: String, properties: [String: String] = [:], interval: Duration = .seconds(5), timeout: Duration = .seconds(2), logger: Logger,
        onChange: @escaping @Sendable (_ reachable: Bool) -> Void
    ) {
        self.bootstrapServers = bootstrapServers
        self.properties = properties
        self.interval = interval
        self.timeout = timeout
        self.logger = logger
        self.onChange = onChange
    }

    package func run() async throws {
        // One client for the process's life: librdkafka keeps its connection and reconnects by itself.
        let client = try KafkaAdmin.adminClient(
            bootstrapServers: bootstrapServers, properties: properties, quietLogs: true, logger: logger)
        var last: Bool? = nil
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            let reachable = await answers(client)
            if reachable != last {
                if reachable {
                    logger.info("the Kafka broker answers", metadata: ["brokers": "\(bootstrapServers)"])
                } else {
                    logger.error("the Kafka broker does not answer", metadata: ["brokers": "\(bootstrapServers)"])
                }
                onChange(reachable)
                last = reachable
            }
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: self.interval) }
        }
    }

    private func answers(_ client: RDKafkaClient) async -> Bool {
        let timeout = self.timeout
        do {
            try await Blocking.run { () throws(KafkaError) in try client.requestMetadata(timeout: timeout) }
            return true
        } catch {
            return false
        }
    }
}
