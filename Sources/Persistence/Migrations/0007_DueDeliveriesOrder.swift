extension Migration {
    /// A claim reads due deliveries in the order it sends them and stops once it has
    /// enough, so that its cost follows what it returns, not the size of the backlog.
    static let dueDeliveriesOrder = Migration(
        version: 7, name: "due deliveries in claim order",
        sql: """
            CREATE INDEX deliveries_due_order ON deliveries (next_attempt_at, id) WHERE status = 'pending';
            DROP INDEX deliveries_due;
            """)
}
