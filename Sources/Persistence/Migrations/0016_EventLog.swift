extension Migration {
    /// Every event decided, for the event log (`GET /v1/events`,
    /// docs/evaluation-rules.md#reading-decision-records): written with its outbox row, kept
    /// after it is published, for a retention.
    static let eventLog = Migration(
        version: 16, name: "event log",
        sql: """
            CREATE TABLE event_log (
                project_id text NOT NULL,
                id bigint GENERATED ALWAYS AS IDENTITY (CACHE 1000),
                -- Not unique: a worker that lost its partitions may hold the same event in a
                -- transaction that will never commit, and its successor must not wait for it.
                event_id text NOT NULL,
                device_id text NOT NULL,
                zone_id text NOT NULL,
                event_type text NOT NULL,
                event_time timestamptz NOT NULL,
                sequence bigint NOT NULL,
                event text NOT NULL,
                decided_at timestamptz NOT NULL DEFAULT now(),
                PRIMARY KEY (project_id, id)
            );
            CREATE INDEX event_log_device ON event_log (project_id, device_id, id);
            CREATE INDEX event_log_zone ON event_log (project_id, zone_id, id);
            CREATE INDEX event_log_decided_at ON event_log USING brin (decided_at);
            """)
}
