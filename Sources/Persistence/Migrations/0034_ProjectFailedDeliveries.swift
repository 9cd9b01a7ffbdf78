extension Migration {
    /// A project's failed deliveries in the order its listing pages them, so that a page of
    /// them (`GET /v1/deliveries?status=failed`) reads the failed ones and not the project's
    /// whole history.
    ///
    /// Failed deliveries are few and spread among the delivered ones: read as a range of the
    /// project's index, a page of 10 failed among 20,000 delivered passed over the history
    /// between them (743 buffers; 12 through this index). A row enters it only when it fails,
    /// so queueing and delivering write no more; and as the status is in other indexes'
    /// predicates already, no update that Postgres made in place (HOT) is written to the
    /// indexes now.
    static let projectFailedDeliveries = Migration(
        version: 34, name: "a project's failed deliveries in id order",
        sql: """
            CREATE INDEX deliveries_project_failed ON deliveries (project_id, id) WHERE status = 'failed';
            """)
}
