extension Migration {
    /// The claims' due order holds only the pending deliveries that have a time to go, not
    /// those waiting at 'infinity' (in flight, or behind another of their device).
    ///
    /// Under load most deliveries wait at 'infinity' from the start: claimed as they are
    /// queued, or queued behind the device's delivery in flight. Each such row still wrote an
    /// entry of the due order that no claim reads (a claim reads the rows due by now), and
    /// each claim, which moves a row to 'infinity', wrote one more and left the old one behind
    /// for the next claims to pass over until a vacuum. Now neither enters the due order; a
    /// row does when it is given a time (let go by its predecessor, retried, released).
    static let scheduledDueOrder = Migration(
        version: 29, name: "due order of the scheduled deliveries only",
        sql: """
            CREATE INDEX deliveries_scheduled_order ON deliveries (next_attempt_at, id)
                WHERE status = 'pending' AND next_attempt_at < 'infinity';
            DROP INDEX deliveries_due_order;
            ALTER INDEX deliveries_scheduled_order RENAME TO deliveries_due_order;
            """)
}
