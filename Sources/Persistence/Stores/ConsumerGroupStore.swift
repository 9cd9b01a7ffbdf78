import Logging
import PostgresNIO

/// The incarnation of each consumer group: 0 (no row) for the configured group id, then
/// one more each time a member found the group wedged and moved on (see `GroupRecovery`).
package struct ConsumerGroupStore: Sendable {
    let database: Database
    let logger: Logger

    package init(database: Database, logger: Logger) {
        self.database = database
        self.logger = logger
    }

    /// The incarnation the group's members should be in.
    package func incarnation(of group: String) async throws -> Int {
        let rows = try await database.client.query(
            "SELECT incarnation FROM consumer_group_incarnations WHERE consumer_group = \(group)", logger: logger)
        for try await incarnation in rows.decode(Int.self) { return incarnation }
        return 0
    }

    /// Moves the group on from `seen` to the next incarnation, unless another member did so
    /// already; either way returns the incarnation to join now.
    package func advance(_ group: String, from seen: Int) async throws -> Int {
        let rows = try await database.client.query(
            """
            INSERT INTO consumer_group_incarnations AS g (consumer_group, incarnation) VALUES (\(group), \(seen + 1))
            ON CONFLICT (consumer_group) DO UPDATE SET incarnation = g.incarnation + 1, updated_at = now()
                WHERE g.incarnation = \(seen)
            RETURNING incarnation
            """, logger: logger)
        for try await incarnation in rows.decode(Int.self) { return incarnation }
        return try await incarnation(of: group)
    }
}
