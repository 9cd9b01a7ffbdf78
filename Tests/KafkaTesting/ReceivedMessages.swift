import Kafka
import Synchronization

/// Reads a consumer's batches in the background (a sequence has one reader)
/// so tests can wait for a number of messages with a deadline.
package final class ReceivedMessages: Sendable {
    private final class Storage: Sendable {
        let messages = Mutex<[KafkaConsumerMessage]>([])
        let batchSizes = Mutex<[Int]>([])
    }

    private let storage = Storage()
    private let task: Task<Void, Never>

    package init(_ consumer: KafkaConsumer) {
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

    package var all: [KafkaConsumerMessage] { storage.messages.withLock { $0 } }
    package var batchSizes: [Int] { storage.batchSizes.withLock { $0 } }
    /// The values read as UTF-8 text.
    package var values: Set<String> { Set(all.map { String(decoding: $0.value, as: UTF8.self) }) }

    package func waitFor(count: Int, within timeout: Duration = .seconds(30)) async throws -> [KafkaConsumerMessage] {
        try await KafkaTestSupport.waitUntil("receive \(count) messages", within: timeout) { all.count >= count }
        return all
    }

    /// Waits until the consumer has closed and its sequence finished.
    package func finished() async {
        await task.value
    }
}
