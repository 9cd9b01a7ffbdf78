import Foundation
import Kafka
import Logging
import ServiceLifecycle
import Synchronization

/// Helpers for the tests of the Kafka client against the real broker.
enum KafkaIntegration {
    static var logger: Logger {
        var logger = Logger(label: "kafka-integration-tests")
        logger.logLevel = ProcessInfo.processInfo.environment["KAFKA_TEST_LOG"].flatMap(Logger.Level.init(rawValue:)) ?? .error
        return logger
    }

    /// Unique per test, so tests can share one broker and run in parallel.
    static func uniqueName(_ prefix: String) -> String {
        "\(prefix)-\(UUID().uuidString.prefix(8).lowercased())"
    }

    static func consumerConfiguration(groupId: String, topics: [String]) -> KafkaConsumerConfiguration {
        // Tansu forms groups in seconds only with short group timeouts.
        KafkaConsumerConfiguration(
            bootstrapServers: TestEnvironment.kafkaBrokers, groupId: groupId, clientId: groupId, topics: topics,
            sessionTimeout: .seconds(6), heartbeatInterval: .seconds(1), maxPollInterval: .seconds(10))
    }

    static func makeProducer() throws -> KafkaProducer {
        try KafkaProducer(
            configuration: KafkaProducerConfiguration(bootstrapServers: TestEnvironment.kafkaBrokers, clientId: "kafka-it"),
            logger: logger)
    }

    /// Polls `condition` until it holds; throws naming `what` after `timeout`. Returns the time it took.
    @discardableResult
    static func waitUntil(
        _ what: String, within timeout: Duration = .seconds(30), _ condition: () -> Bool
    ) async throws -> Duration {
        let started = ContinuousClock.now
        while !condition() {
            guard ContinuousClock.now - started < timeout else { throw KafkaTestTimeout(description: "\(what): not within \(timeout)") }
            try await Task.sleep(for: .milliseconds(50))
        }
        return ContinuousClock.now - started
    }
}

struct KafkaTestTimeout: Error, CustomStringConvertible {
    var description: String
}

/// Reads a consumer's batches in the background (a sequence has one reader).
final class KafkaReceivedMessages: Sendable {
    private let messages = Mutex<[KafkaConsumerMessage]>([])
    private let task: Mutex<Task<Void, Never>?> = Mutex(nil)

    init(_ consumer: KafkaConsumer) {
        let started = Task { [weak self] in
            do {
                for try await batch in consumer.batches { self?.messages.withLock { $0 += batch } }
            } catch {}
        }
        task.withLock { $0 = started }
    }

    var all: [KafkaConsumerMessage] { messages.withLock { $0 } }
    var values: Set<String> { Set(all.map { String(decoding: $0.value, as: UTF8.self) }) }

    func waitFor(count: Int, within timeout: Duration = .seconds(30)) async throws -> [KafkaConsumerMessage] {
        try await KafkaIntegration.waitUntil("receive \(count) messages", within: timeout) { all.count >= count }
        return all
    }
}
