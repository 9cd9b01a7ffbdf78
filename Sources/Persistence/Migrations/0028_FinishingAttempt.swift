extension Migration {
    /// The attempt that finished a delivery (delivered or failed) kept on the delivery's row
    /// instead of in a row of its own in `delivery_attempts`.
    ///
    /// Most deliveries take one attempt. The recording rewrites the delivery's row anyway;
    /// with the attempt on it, a delivery done at its first attempt no longer costs a row of
    /// the attempt log, its two index entries and a check of its reference. The attempt log
    /// keeps the attempts that did not finish one (retried, or recorded after their lease
    /// ran out), and a replay moves the finishing attempt there before the next round.
    /// Its number is the delivery's `attempts`, its status code and error `last_status_code`
    /// and `last_error`.
    static let finishingAttempt = Migration(
        version: 28, name: "the attempt that finished a delivery kept on its row",
        sql: """
            ALTER TABLE deliveries
                ADD COLUMN finishing_attempt_started_at timestamptz,
                ADD COLUMN finishing_attempt_latency_ms double precision;
            """)
}
