extension Migration {
    /// Decision records move from one row per fix to one row per run of a device's records
    /// written together (at most `DecisionStore.recordsPerRow`), each record kept as the JSON
    /// the decisions API returns. Per record, a row of its own cost Postgres a heap tuple, two
    /// index entries and the parsing of 14 columns: most of what recording cost the evaluator.
    static let decisionRecordRuns = Migration(
        version: 18, name: "decision record runs",
        sql: """
            ALTER TABLE decision_records RENAME TO decision_records_per_fix;
            ALTER TABLE decision_records_per_fix RENAME CONSTRAINT decision_records_pkey TO decision_records_per_fix_pkey;
            ALTER INDEX decision_records_evaluated_at RENAME TO decision_records_per_fix_evaluated_at;
            CREATE TABLE decision_records (
                -- A 64-bit digest of the project and device (DeviceKey.recordKey): the index stays
                -- small; the two names beside it tell a digest's rare namesakes apart.
                device_key bigint NOT NULL,
                project_id text NOT NULL,
                device_id text NOT NULL,
                id bigint GENERATED ALWAYS AS IDENTITY (CACHE 1000),
                -- When the run's newest record was decided (retention), and its oldest (erasure:
                -- a row holding any record decided before a device's erasure goes whole).
                evaluated_at timestamptz NOT NULL,
                first_evaluated_at timestamptz NOT NULL,
                record_count integer NOT NULL CHECK (record_count > 0),
                -- The run's records, oldest first, one JSON object per line; compressed with lz4,
                -- several times cheaper to write than the default pglz (which led Postgres's profile).
                records text COMPRESSION lz4 NOT NULL,
                PRIMARY KEY (device_key, id)
            );
            CREATE INDEX decision_records_evaluated_at ON decision_records USING brin (evaluated_at);
            INSERT INTO decision_records (device_key, project_id, device_id, evaluated_at, first_evaluated_at, record_count, records)
            SELECT device_key, project_id, device_id, evaluated_at, evaluated_at, 1,
                   jsonb_strip_nulls(jsonb_build_object(
                       'fixId', fix_id, 'timestamp', fix_time, 'evaluatedAt', evaluated_at, 'mode', mode,
                       'location', jsonb_build_object('lat', lat, 'lon', lon, 'accuracy', accuracy, 'speed', speed, 'bearing', bearing)))
                   || jsonb_build_object('entries', coalesce(entries, '[]'::jsonb), 'eventIds', coalesce(to_jsonb(event_ids), '[]'::jsonb))
              FROM decision_records_per_fix ORDER BY id;
            DROP TABLE decision_records_per_fix;
            """)
}
