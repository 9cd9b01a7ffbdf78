import Foundation
import Logging
import PostgresNIO

/// How far each partition of a dead-letter topic has been sent back to the pipeline: the
/// next offset a redrive reads.
package struct DeadLetterRedriveStore: Sendable {
    let database: Database
    let logger: Logger

    package init(database: Database, logger: Logger) {
        self.database = database
        self.logger = logger
    }

    /// The next offset to read of each partition of `topic` a redrive has read; a partition
    /// never read starts at its first record.
    package func positions(topic: String) async throws -> [Int32: Int64] {
        let rows = try await database.client.query(
            "SELECT partition, next_offset FROM dead_letter_redrives WHERE topic = \(topic)", logger: logger)
        var positions: [Int32: Int64] = [:]
        for try await (partition, offset) in rows.decode((Int32, Int64).self) { positions[partition] = offset }
        return positions
    }

    /// Records that the partition was read up to `offset` (exclusive). Never moves a partition back.
    package func advance(topic: String, partition: Int32, to offset: Int64) async throws {
        try await database.client.perform(
            """
            INSERT INTO dead_letter_redrives (topic, partition, next_offset)
            VALUES (\(topic), \(partition), \(offset))
            ON CONFLICT (topic, partition) DO UPDATE
               SET next_offset = GREATEST(dead_letter_redrives.next_offset, EXCLUDED.next_offset), updated_at = now()
            """, logger: logger)
    }
}
