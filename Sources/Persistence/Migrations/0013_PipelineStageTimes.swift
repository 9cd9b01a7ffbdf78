extension Migration {
    /// When the fix deciding an event was accepted travels with the event (outbox, then
    /// each delivery), so that a webhook can be timed from its fix, stage by stage.
    static let pipelineStageTimes = Migration(
        version: 13, name: "pipeline stage times",
        sql: """
            ALTER TABLE event_outbox ADD COLUMN fix_accepted_at timestamptz;
            ALTER TABLE deliveries ADD COLUMN fix_accepted_at timestamptz;
            """)
}
