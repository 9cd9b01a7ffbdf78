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

    /// Revoked by the group, or found taken by another worker's newer epoch.
    func released(_ partitions: some Sequence<KafkaTopicPartition>) {
        leases.withLockedValue { leases in
            for partition in partitions { leases.removeValue(forKey: partition) }
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
