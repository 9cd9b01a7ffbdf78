/// Lets an application that keeps its own offsets (in a database, atomically
/// with its results) decide where each newly assigned partition starts, and
/// finish or abort its work before partitions move to another member.
///
/// Called from the consumer's rebalance callback on its poll thread, which
/// waits for the call to return: no new messages are read meanwhile.
public protocol KafkaRebalanceListener: Sendable {
    /// Returns the offset to start each newly assigned partition at (the NEXT offset to read),
    /// or none for a partition to start at the group's committed offset / `auto.offset.reset`.
    /// Throwing stops the consumer: `run()` then throws the error.
    func partitionsAssigned(_ partitions: [KafkaTopicPartition]) async throws -> [KafkaTopicPartition: Int64]

    /// Called before partitions are taken away; messages of these partitions
    /// not yet handed out are dropped, and the application finishes or aborts
    /// work in flight for them.
    func partitionsRevoked(_ partitions: [KafkaTopicPartition]) async
}
