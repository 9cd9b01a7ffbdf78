import Foundation
import Logging
import PostgresNIO

/// Consumer offsets kept in Postgres, written in the same transaction as the work
/// they cover, so that a restart resumes exactly after what was committed.
package struct OffsetStore: Sendable {
    let database: Database
    let logger: Logger

    package init(database: Database, logger: Logger) {
        self.database = database
        self.logger = logger
    }

    /// The next offset to read, per (topic, partition) that has one.
    package func nextOffsets(group: String, topic: String, partitions: [Int32]) async throws -> [Int32: Int64] {
        let rows = try await database.client.query(
            """
            SELECT partition, next_offset FROM consumer_offsets
            WHERE consumer_group = \(group) AND topic = \(topic) AND partition = ANY(\(partitions.map(Int.init))::int4[])
            """, logger: logger)
        var result: [Int32: Int64] = [:]
        for try await (partition, offset) in rows.decode((Int32, Int64).self) { result[partition] = offset }
        return result
    }

    /// Saves the next offsets and, for the partitions given in `consumedUntil`, the latest
    /// record time the work covered (capped at the database's clock, so that a producer's
    /// clock running ahead cannot carry a partition's stream time into the future).
    package func save(
        group: String, offsets: [(topic: String, partition: Int32, nextOffset: Int64)],
        consumedUntil: [OwnedPartition: Date] = [:], on connection: PostgresConnection
    ) async throws {
        guard !offsets.isEmpty else { return }
        let none = Date(timeIntervalSince1970: 0)
        let times = offsets.map { consumedUntil[OwnedPartition(topic: $0.topic, partition: $0.partition)] ?? none }
        try await connection.perform(
            """
            INSERT INTO consumer_offsets (consumer_group, topic, partition, next_offset, consumed_until, updated_at)
            SELECT \(group), o.topic, o.partition, o.next_offset,
                   NULLIF(LEAST(o.consumed_until, now()), 'epoch'::timestamptz), now()
            FROM UNNEST(\(offsets.map(\.topic))::text[], \(offsets.map { Int($0.partition) })::int4[],
                        \(offsets.map(\.nextOffset))::int8[], \(times)::timestamptz[])
                 AS o(topic, partition, next_offset, consumed_until)
            ON CONFLICT (consumer_group, topic, partition) DO UPDATE
               SET next_offset = GREATEST(consumer_offsets.next_offset, EXCLUDED.next_offset),
                   consumed_until = GREATEST(consumer_offsets.consumed_until, EXCLUDED.consumed_until), updated_at = now()
            """, logger: logger)
    }

    /// Records that these partitions had nothing waiting at `instant`: their stream is
    /// consumed up to it. Only their owner knows, so the caller verifies its epochs in
    /// the same transaction.
    package func markConsumed(
        group: String, topic: String, partitions: [Int32], until instant: Date, on connection: PostgresConnection
    ) async throws {
        guard !partitions.isEmpty else { return }
        try await connection.perform(
            """
            UPDATE consumer_offsets SET consumed_until = GREATEST(consumed_until, \(instant))
            WHERE consumer_group = \(group) AND topic = \(topic) AND partition = ANY(\(partitions.map(Int.init))::int4[])
            """, logger: logger)
    }
}
