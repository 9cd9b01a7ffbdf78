import Kafka
import Persistence
import Testing

@testable import Evaluator

/// A lease is let go only for the epoch whose ownership was found lost.
@Suite struct PartitionLeasesTests {
    let partition = KafkaTopicPartition(topic: "fixes", partition: 3)
    var owned: OwnedPartition { OwnedPartition(topic: partition.topic, partition: partition.partition) }

    /// A batch under epoch 1 outlives the revocation; the partition is handed back to this
    /// worker under epoch 2; the batch's ownership check then fails. Before, that failure
    /// removed the epoch-2 lease and every later batch of the partition was abandoned.
    @Test func leaseGrantedAgainDuringASlowBatchSurvivesThatBatchsOwnershipFailure() throws {
        let leases = PartitionLeases()
        leases.granted([partition: 1], nextOffsets: [partition: 10])
        let slowBatch = try leases.epochs(covering: [partition])

        leases.released([partition])
        leases.granted([partition: 2], nextOffsets: [partition: 10])
        leases.released(PartitionOwnershipLost(partitions: [owned]), heldUnder: slowBatch)

        #expect(leases.owns(partition))
        #expect(try leases.epochs(covering: [partition]) == [owned: 2])
    }

    /// The epoch that was lost is let go: later batches of the partition are left to its new owner.
    @Test func leaseWhoseOwnershipWasLostIsReleased() throws {
        let leases = PartitionLeases()
        leases.granted([partition: 4], nextOffsets: [:])
        let batch = try leases.epochs(covering: [partition])
        leases.released(PartitionOwnershipLost(partitions: [owned]), heldUnder: batch)
        #expect(!leases.owns(partition))
        #expect(throws: PartitionOwnershipLost.self) { try leases.epochs(covering: [partition]) }
    }
}
