/// What other threads may ask of a consumer: its assignment, and whether a
/// polled message still belongs to the current ownership of its partition.
///
/// Each assignment of a partition gets a new generation; a batch records the
/// generations it was polled under, and a message is handed out only while
/// its partition still has that generation. So nothing polled before a
/// revoke is delivered after it, even if the partition came back.
struct ConsumerStateMachine {
    enum Lifecycle {
        case initial
        case running
        case closed
    }

    private(set) var lifecycle: Lifecycle = .initial
    private(set) var generations: [KafkaTopicPartition: UInt64] = [:]
    private var nextGeneration: UInt64 = 1
    private(set) var failure: KafkaError?

    var assignment: Set<KafkaTopicPartition> { Set(generations.keys) }

    mutating func startRunning() -> Result<Void, KafkaError> {
        guard lifecycle == .initial else {
            return .failure(KafkaError(message: "KafkaConsumer.run() may be called only once"))
        }
        lifecycle = .running
        return .success(())
    }

    mutating func assigned(_ partitions: [KafkaTopicPartition]) -> [KafkaTopicPartition: UInt64] {
        var result: [KafkaTopicPartition: UInt64] = [:]
        for partition in partitions {
            generations[partition] = nextGeneration
            result[partition] = nextGeneration
            nextGeneration += 1
        }
        return result
    }

    mutating func revoked(_ partitions: [KafkaTopicPartition]) {
        for partition in partitions { generations.removeValue(forKey: partition) }
    }

    /// Keeps the first failure; later ones are consequences.
    mutating func failed(_ error: KafkaError) {
        if failure == nil { failure = error }
    }

    mutating func closed() {
        lifecycle = .closed
        generations.removeAll()
    }

    func isCurrent(_ partition: KafkaTopicPartition, generation: UInt64) -> Bool {
        generations[partition] == generation
    }
}
