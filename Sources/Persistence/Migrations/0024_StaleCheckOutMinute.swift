extension Migration {
    /// The stale check-out sweep finds its devices by the minute their deadline falls in,
    /// not by the deadline itself.
    ///
    /// A checked-in device's deadline moves with each of its fixes, and while it was indexed
    /// every write of the device's state was a new index entry and a new row version outside
    /// the page (not a heap-only update): over a closed loop of 300,000 fixes, 17 % of the
    /// state writes were heap-only, and 3,000 devices' states took 11 MB. The minute changes
    /// once a minute at most, so the writes in between stay in the row's page.
    ///
    /// `stale_minute` is the deadline rounded down to its minute, never after it: the sweep
    /// reads the rows of the minutes begun and keeps those whose deadline has passed. Neither
    /// the index's key nor its predicate names `stale_at` (a column in either makes every
    /// change of it a full update). A process of an older version writes deadlines without
    /// their minute: a device it checks in is found by the sweep only after a newer process
    /// writes it again, and else checked out when its next fix shows the deadline passed.
    static let staleCheckOutMinute = Migration(
        version: 24, name: "stale check-outs found by their minute",
        sql: """
            ALTER TABLE device_states ADD COLUMN stale_minute timestamptz;
            UPDATE device_states SET stale_minute = date_bin('1 minute', stale_at, TIMESTAMPTZ 'epoch') WHERE stale_at IS NOT NULL;
            CREATE INDEX device_states_partition_stale_minute ON device_states (partition, stale_minute) WHERE stale_minute IS NOT NULL;
            DROP INDEX device_states_partition_stale_at;
            """)
}
