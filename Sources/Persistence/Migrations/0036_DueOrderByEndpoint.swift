extension Migration {
    /// The claims' due order kept by endpoint: a claim walks the endpoints with deliveries
    /// scheduled (one index descent each, its oldest with it) and reads the due deliveries
    /// of those it may take from, so that an endpoint the claimer holds enough of, or a
    /// disabled one, is passed over whole. In one order by time, a claim read every due row
    /// of such an endpoint to pass over it (a saturated partner's 50,000 due heads on every
    /// claim). The same rows enter it as before (scheduled pending ones only).
    static let dueOrderByEndpoint = Migration(
        version: 36, name: "due order by endpoint",
        sql: """
            CREATE INDEX deliveries_endpoint_due_order ON deliveries (endpoint_id, next_attempt_at, id)
                WHERE status = 'pending' AND next_attempt_at < 'infinity';
            DROP INDEX deliveries_due_order;
            ALTER INDEX deliveries_endpoint_due_order RENAME TO deliveries_due_order;
            """)
}
