extension Migration {
    /// A project's deliveries in the order its listing pages them (`GET /v1/deliveries`:
    /// newest id first, from a cursor), so that a page, read as a range of this index
    /// (`WebhookStore.pageStatement`), reads the project's own rows and no other tenant's.
    ///
    /// By (project, time queued) the index could not give that order: the planner either
    /// sorted every delivery of the project for each page or read the table newest first,
    /// passing over every newer delivery of the other projects (a project of 20,000
    /// deliveries beside a newer 300,000 of another read 8,855 buffers for a page of 50).
    /// The new index takes the old one's place, so queueing writes no more.
    static let projectDeliveriesInIdOrder = Migration(
        version: 33, name: "a project's deliveries in id order",
        sql: """
            CREATE INDEX deliveries_project_id_order ON deliveries (project_id, id);
            DROP INDEX deliveries_project;
            ALTER INDEX deliveries_project_id_order RENAME TO deliveries_project;
            """)
}
