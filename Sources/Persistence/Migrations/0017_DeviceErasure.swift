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
            """)
}
