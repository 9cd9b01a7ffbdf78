extension Migration {
    /// When each notifier last renewed its claims, and until when that holds.
    ///
    /// A claimed delivery waits at 'infinity' in the due order while leased, among the
    /// deliveries waiting behind another: the two cannot be told apart by an index without
    /// making every lease renewal write the indexes. So the deliveries of a notifier that
    /// stopped are looked for once it stops renewing (`releaseLapsedLeases`), not on every pass.
    static let notifierLeases = Migration(
        version: 26, name: "each notifier's renewal of its claims",
        sql: """
            CREATE TABLE notifier_leases (
                owner text PRIMARY KEY,
                renewed_until timestamptz NOT NULL
            );
            """)
}
