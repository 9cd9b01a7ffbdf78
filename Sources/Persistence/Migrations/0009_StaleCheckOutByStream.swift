extension Migration {
    /// A stale check-out is judged against how far the device's partition of the fixes
    /// topic has been consumed, not by the wall clock alone: a device's row says which
    /// partition its fixes come from, and a partition's offsets say up to when its
    /// stream has been consumed.
    static let staleCheckOutByStream = Migration(
        version: 9, name: "stale check-out judged by the consumed stream",
        sql: """
            -- The fixes topic's partition the device's last batch came from; NULL for rows
            -- written before this column existed, until the device's next fix.
            ALTER TABLE device_states ADD COLUMN partition integer;

            -- Every record of the partition stamped before this instant has been processed:
            -- the latest record time a batch committed, or the time its owner found nothing
            -- waiting. NULL until either happened.
            ALTER TABLE consumer_offsets ADD COLUMN consumed_until timestamptz;

            -- The sweep looks for due devices per partition.
            CREATE INDEX device_states_partition_stale_at ON device_states (partition, stale_at) WHERE stale_at IS NOT NULL;
            DROP INDEX device_states_stale_at;
            """)
}
