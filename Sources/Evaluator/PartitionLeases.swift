import Foundation
import Kafka
import NIOConcurrencyHelpers
import Persistence

/// The partitions this worker holds: the epoch it took each one at (checked by every
/// batch before it commits) and how far each has been processed (watched for stalls).
final class PartitionLeases: Sendable {
    struct Lease {
        var epoch: Int64
        /// The next offset to process, once known (committed before, or processed since).
        var nextOffset: Int64?
        /// When `nextOffset` last moved, or when the partition was taken.
        var movedAt: ContinuousClock.Instant
    }

    private let leases = NIOLockedValueBox<[KafkaTopicPartition: Lease]>([:])

    func granted(_ epochs: [KafkaTopicPartition: Int64], nextOffsets: [KafkaTopicPartition: Int64]) {
        let now = ContinuousClock.now
        leases.withLockedValue { leases in
            for (partition, epoch) in epochs {
                leases[partition] = Lease(epoch: epoch, nextOffset: nextOffsets[partition], movedAt: now)
            }
        }
    }

    /// Revoked by the group: let go whatever the epoch.
    func released(_ partitions: some Sequence<KafkaTopicPartition>) {
        leases.withLockedValue { leases in
            for partition in partitions { leases.removeValue(forKey: partition) }
        }
    }

    /// Found taken by another worker's newer epoch, by work that ran under `epochs`: let go
    /// only while still held under those epochs. A partition revoked while that work was
    /// slow and granted to this worker again under a newer epoch stays held; releasing it
    /// would leave every later batch of it without a lease until the next rebalance.
    func released(_ lost: PartitionOwnershipLost, heldUnder epochs: [OwnedPartition: Int64]) {
        leases.withLockedValue { leases in
            for owned in lost.partitions {
                let partition = KafkaTopicPartition(topic: owned.topic, partition: owned.partition)
                guard let lease = leases[partition], let lost = epochs[owned], lease.epoch <= lost else { continue }
                leases.removeValue(forKey: partition)
            }
        }
    }

    func owns(_ partition: KafkaTopicPartition) -> Bool {
        leases.withLockedValue { $0[partition] != nil }
    }

    /// The epochs a batch over these partitions commits under; throws
    /// ``PartitionOwnershipLost`` for any this worker does not hold (any more).
    func epochs(covering partitions: some Sequence<KafkaTopicPartition>) throws -> [OwnedPartition: Int64] {
        try leases.withLockedValue { leases in
            var epochs: [OwnedPartition: Int64] = [:]
            var lost: [OwnedPartition] = []
            for partition in Set(partitions) {
                let owned = OwnedPartition(topic: partition.topic, partition: partition.partition)
                if let lease = leases[partition] { epochs[owned] = lease.epoch } else { lost.append(owned) }
            }
            if !lost.isEmpty { throw PartitionOwnershipLost(partitions: lost) }
            return epochs
        }
    }

    /// Records that these partitions were processed up to (excluding) these offsets.
    func processed(upTo offsets: [KafkaTopicPartition: Int64]) {
        let now = ContinuousClock.now
        leases.withLockedValue { leases in
            for (partition, offset) in offsets {
                guard var lease = leases[partition] else { continue }
                if lease.nextOffset.map({ offset > $0 }) ?? true {
                    lease.nextOffset = offset
                    lease.movedAt = now
                    leases[partition] = lease
                }
            }
        }
    }

    var snapshot: [KafkaTopicPartition: Lease] {
        leases.withLockedValue { $0 }
    }
}

extension PartitionOwnershipLost {
    var topicPartitions: [KafkaTopicPartition] {
        partitions.map { KafkaTopicPartition(topic: $0.topic, partition: $0.partition) }
    }
}
