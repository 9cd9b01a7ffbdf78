extension Migration {
    /// What the evaluator decided about each fix, and why (docs/evaluation-rules.md#decision-records): one row per
    /// evaluated fix, written with the device's state, kept for a retention and at least
    /// the last 100 of each device. Fixes that concerned no zone have no entries (NULL).
    static let decisionRecords = Migration(
        version: 15, name: "decision records",
        sql: """
            CREATE TABLE decision_records (
                -- A 64-bit digest of the project and device (DeviceKey.recordKey): the index stays
                -- small; the two names beside it tell a digest's rare namesakes apart.
                device_key bigint NOT NULL,
                project_id text NOT NULL,
                device_id text NOT NULL,
                id bigint GENERATED ALWAYS AS IDENTITY (CACHE 1000),
                fix_id text,
                fix_time timestamptz NOT NULL,
                evaluated_at timestamptz NOT NULL DEFAULT now(),
                mode text NOT NULL,
                lat double precision NOT NULL,
                lon double precision NOT NULL,
                accuracy double precision,
                speed double precision,
                bearing double precision,
                entries jsonb,
                event_ids text[],
                PRIMARY KEY (device_key, id)
            );
            CREATE INDEX decision_records_evaluated_at ON decision_records USING brin (evaluated_at);
            """)
}
