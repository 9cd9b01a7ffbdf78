/// Lets an application that keeps its own offsets (in a database, atomically
/// with its results) decide where each newly assigned partition starts, and
/// finish or abort its work before partitions move to another member.
///
/// `partitionsAssigned` runs while the poll thread goes on serving the group (it may
/// take longer than `maxPollInterval`); the partitions are read only once it returns.
/// `partitionsRevoked` is called from the rebalance callback, which waits for it, so it
/// must return well within `maxPollInterval`. An assignment that a revocation overtook
/// before its `partitionsAssigned` returned is followed by `partitionsRevoked`.
package protocol KafkaRebalanceListener: Sendable {
    /// Returns the offset to start each newly assigned partition at (the NEXT offset to read),
    /// or none for a partition to start at the group's committed offset / `auto.offset.reset`.
    /// Throwing stops the consumer: `run()` then throws the error.
    func partitionsAssigned(_ partitions: [KafkaTopicPartition]) async throws -> [KafkaTopicPartition: Int64]

    /// Called before partitions are taken away; messages of these partitions
    /// not yet handed out are dropped, and the application finishes or aborts
    /// work in flight for them.
    func partitionsRevoked(_ partitions: [KafkaTopicPartition]) async
}
