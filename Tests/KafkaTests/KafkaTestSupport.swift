import Foundation
import Kafka
import Logging
import ServiceLifecycle
import Synchronization

/// Shared by the unit tests: quiet logging, unique names, services run for
/// the length of a test body, and a collector that reads a consumer's batches.
enum KafkaTestSupport {
    static var logger: Logger {
        var logger = Logger(label: "kafka-tests")
        logger.logLevel = ProcessInfo.processInfo.environment["KAFKA_TEST_LOG"].flatMap(Logger.Level.init(rawValue:)) ?? .error
        return logger
    }

    static func uniqueName(_ prefix: String) -> String {
        "\(prefix)-\(UUID().uuidString.prefix(8).lowercased())"
    }

    /// Group settings that make the mock cluster (and Tansu) form groups in seconds.
    static func consumerConfiguration(
        bootstrapServers: String, groupId: String, topics: [String]
    ) -> KafkaConsumerConfiguration {
        KafkaConsumerConfiguration(
            bootstrapServers: bootstrapServers, groupId: groupId, clientId: groupId, topics: topics,
            sessionTimeout: .seconds(6), heartbeatInterval: .seconds(1), maxPollInterval: .seconds(10))
    }
}

struct TestTimeout: Error, CustomStringConvertible {
    var description: String
}

/// Reads a consumer's batches in the background (a sequence has one reader)
/// so tests can wait for a number of messages with a deadline.
final class ReceivedMessages: Sendable {
    private final class Storage: Sendable {
        let messages = Mutex<[KafkaConsumerMessage]>([])
        let batchSizes = Mutex<[Int]>([])
    }

    private let storage = Storage()
    private let task: Task<Void, Never>

    init(_ consumer: KafkaConsumer) {
        let storage = self.storage
        task = Task {
            do {
                for try await batch in consumer.batches {
                    storage.messages.withLock { $0 += batch }
                    storage.batchSizes.withLock { $0.append(batch.count) }
                }
            } catch {}
        }
    }

    var all: [KafkaConsumerMessage] { storage.messages.withLock { $0 } }
    var batchSizes: [Int] { storage.batchSizes.withLock { $0 } }

    func waitFor(count: Int, within timeout: Duration = .seconds(30)) async throws -> [KafkaConsumerMessage] {
        let deadline = ContinuousClock.now + timeout
        while true {
            let current = all
            if current.count >= count { return current }
            guard ContinuousClock.now < deadline else {
                throw TestTimeout(description: "received \(current.count) of \(count) messages within \(timeout)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Waits until the consumer has closed and its sequence finished.
    func finished() async {
        await task.value
    }
}
