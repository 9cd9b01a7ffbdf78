extension Migration {
    /// The planner is not to estimate how many deliveries are pending from statistics.
    ///
    /// The share of pending rows swings from none (the partner keeps up) to thousands (it
    /// slows down, or events come dense) within minutes, while an ANALYZE taken at a quiet
    /// moment says that nothing is pending. Planned with that, every lookup of one device's
    /// pending deliveries (the claim's, the queueing's, the recording's) became a scan of
    /// all pending rows: with 8,000 waiting, a claim's window of 400 rows read 2.3 million
    /// buffers in 5 s, and the backlog grew on itself. Without statistics on `status` the
    /// planner takes a fixed small share of the table as pending, and probes the
    /// pending-heads index per device whatever the backlog.
    ///
    /// The operators' backlog count reads the pending deliveries through that index and the
    /// failed ones through an index of their own; the index of all undelivered rows, which
    /// every delivery entered and which the planner could scan for any pending lookup, goes.
    static let deliveryStatusStatistics = Migration(
        version: 23, name: "delivery status without statistics",
        sql: """
            ALTER TABLE deliveries ALTER COLUMN status SET STATISTICS 0;
            -- Changing the column to its own type (no rewrite) drops the statistics taken so far.
            ALTER TABLE deliveries ALTER COLUMN status TYPE text;
            CREATE INDEX deliveries_failed ON deliveries (endpoint_id) WHERE status = 'failed';
            DROP INDEX deliveries_undelivered_age;
            """)
}
