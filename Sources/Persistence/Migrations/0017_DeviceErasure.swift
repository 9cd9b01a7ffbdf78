extension Migration {
    /// A device's personal data can be erased: its deliveries keep their row (an operator
    /// still sees that they were sent, or cancelled) without their payload.
    static let deviceErasure = Migration(
        version: 17, name: "device erasure",
        sql: """
            ALTER TABLE deliveries DROP CONSTRAINT deliveries_status_check;
            ALTER TABLE deliveries ADD CONSTRAINT deliveries_status_check
                CHECK (status IN ('pending', 'delivered', 'failed', 'cancelled'));
            ALTER TABLE deliveries ADD COLUMN erased_at timestamptz;
            -- Devices erased lately, by the digest of their project and id only (the names are
            -- gone): decision records of their earlier fixes that are written after the erasure
            -- (by a worker behind it) are removed as they are written.
            CREATE TABLE device_erasures (
                device_key bigint NOT NULL,
                erased_at timestamptz NOT NULL DEFAULT now()
            );
            CREATE INDEX device_erasures_at ON device_erasures (erased_at);
            """)
}
