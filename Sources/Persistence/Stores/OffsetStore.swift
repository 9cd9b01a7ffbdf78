import Logging
import PostgresNIO

/// Consumer offsets kept in Postgres, written in the same transaction as the work
/// they cover, so that a restart resumes exactly after what was committed.
public struct OffsetStore: Sendable {
    let database: Database
    let logger: Logger

    public init(database: Database, logger: Logger) {
        self.database = database
        self.logger = logger
    }

    /// The next offset to read, per (topic, partition) that has one.
    public func nextOffsets(group: String, topic: String, partitions: [Int32]) async throws -> [Int32: Int64] {
        let rows = try await database.client.query(
            """
            SELECT partition, next_offset FROM consumer_offsets
            WHERE consumer_group = \(group) AND topic = \(topic) AND partition = ANY(\(partitions.map(Int.init))::int4[])
            """, logger: logger)
        var result: [Int32: Int64] = [:]
        for try await (partition, offset) in rows.decode((Int32, Int64).self) { result[partition] = offset }
        return result
    }

    public func save(
        group: String, offsets: [(topic: String, partition: Int32, nextOffset: Int64)], on connection: PostgresConnection
    ) async throws {
        guard !offsets.isEmpty else { return }
        try await connection.query(
            """
            INSERT INTO consumer_offsets (consumer_group, topic, partition, next_offset, updated_at)
            SELECT \(group), o.topic, o.partition, o.next_offset, now()
            FROM UNNEST(\(offsets.map(\.topic))::text[], \(offsets.map { Int($0.partition) })::int4[],
                        \(offsets.map(\.nextOffset))::int8[]) AS o(topic, partition, next_offset)
            ON CONFLICT (consumer_group, topic, partition) DO UPDATE
               SET next_offset = GREATEST(consumer_offsets.next_offset, EXCLUDED.next_offset), updated_at = now()
            """, logger: logger)
    }
}
