extension Migration {
    /// A claim reads due deliveries in the order it sends them and stops once it has
    /// enough, so that its cost follows what it returns, not the size of the backlog.
    ///
    /// The operators' backlog count keeps its own partial index of undelivered rows, on a
    /// column no delivery lookup constrains: keyed by endpoint and status it was taken, with
    /// stale statistics, for the per-device lookups, which it serves by reading every
    /// undelivered row of the endpoint.
    static let dueDeliveriesOrder = Migration(
        version: 7, name: "due deliveries in claim order",
        sql: """
            CREATE INDEX deliveries_due_order ON deliveries (next_attempt_at, id) WHERE status = 'pending';
            DROP INDEX deliveries_due;
            CREATE INDEX deliveries_undelivered_age ON deliveries (created_at) WHERE status <> 'delivered';
            DROP INDEX deliveries_undelivered;
            """)
}
