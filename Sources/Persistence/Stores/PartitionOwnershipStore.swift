import Logging
import PostgresNIO

/// A partition of a consumer group's topic, as the database knows it.
package struct OwnedPartition: Sendable, Hashable {
    package var topic: String
    package var partition: Int32

    package init(topic: String, partition: Int32) {
        self.topic = topic
        self.partition = partition
    }
}

/// A worker's batch touched a partition whose epoch moved on: another worker owns it
/// now, and the batch's transaction must not commit.
package struct PartitionOwnershipLost: Error, Sendable, CustomStringConvertible {
    package var partitions: [OwnedPartition]

    package init(partitions: [OwnedPartition]) {
        self.partitions = partitions
    }

    package var description: String {
        "partitions owned by another worker now: \(partitions.map { "\($0.topic)[\($0.partition)]" }.joined(separator: ", "))"
    }
}

/// Fences partition ownership in Postgres. Taking a partition bumps its epoch under a
/// row lock, which waits for any older owner's batch that is committing; every batch
/// then checks, in its own transaction, that its epochs are still current.
package struct PartitionOwnershipStore: Sendable {
    let database: Database
    let logger: Logger

    package init(database: Database, logger: Logger) {
        self.database = database
        self.logger = logger
    }

    /// Takes these partitions for `owner`: returns each one's new epoch and the next
    /// offset recorded for it (absent when nothing was committed yet), read after the
    /// epoch moved, so that it includes everything the previous owner committed.
    package func acquire(group: String, topic: String, partitions: [Int32], owner: String) async throws
        -> (epochs: [Int32: Int64], nextOffsets: [Int32: Int64])
    {
        let sorted = partitions.sorted().map(Int.init)
        return try await database.withTransaction { connection in
            var epochs: [Int32: Int64] = [:]
            let rows = try await connection.query(
                """
                INSERT INTO partition_epochs (consumer_group, topic, partition, epoch, owner, acquired_at)
                SELECT \(group), \(topic), p, 1, \(owner), now() FROM UNNEST(\(sorted)::int4[]) AS p
                ON CONFLICT (consumer_group, topic, partition) DO UPDATE
                   SET epoch = partition_epochs.epoch + 1, owner = EXCLUDED.owner, acquired_at = now()
                RETURNING partition, epoch
                """, logger: logger)
            for try await (partition, epoch) in rows.decode((Int32, Int64).self) { epochs[partition] = epoch }
            var offsets: [Int32: Int64] = [:]
            let stored = try await connection.query(
                """
                SELECT partition, next_offset FROM consumer_offsets
                WHERE consumer_group = \(group) AND topic = \(topic) AND partition = ANY(\(sorted)::int4[])
                """, logger: logger)
            for try await (partition, offset) in stored.decode((Int32, Int64).self) { offsets[partition] = offset }
            return (epochs, offsets)
        }
    }

    /// Throws ``PartitionOwnershipLost`` unless every epoch is still current, and holds
    /// the rows (FOR SHARE) until the caller's transaction ends, so that no new owner
    /// can take a partition between this check and the commit.
    package func verify(
        group: String, epochs: [OwnedPartition: Int64], on connection: PostgresConnection
    ) async throws {
        guard !epochs.isEmpty else { return }
        let keys = epochs.keys.sorted { ($0.topic, $0.partition) < ($1.topic, $1.partition) }
        let rows = try await connection.query(
            """
            SELECT e.topic, e.partition, e.epoch FROM partition_epochs e
            JOIN UNNEST(\(keys.map(\.topic))::text[], \(keys.map { Int($0.partition) })::int4[]) AS k(topic, partition)
              ON e.topic = k.topic AND e.partition = k.partition
            WHERE e.consumer_group = \(group)
            ORDER BY e.topic, e.partition
            FOR SHARE OF e
            """, logger: logger)
        var current: [OwnedPartition: Int64] = [:]
        for try await (topic, partition, epoch) in rows.decode((String, Int32, Int64).self) {
            current[OwnedPartition(topic: topic, partition: partition)] = epoch
        }
        let lost = keys.filter { current[$0] != epochs[$0] }
        if !lost.isEmpty { throw PartitionOwnershipLost(partitions: lost) }
    }
}
