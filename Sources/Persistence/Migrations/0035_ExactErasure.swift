extension Migration {
    /// Erasure told apart from what comes after it by position, not by clocks.
    ///
    /// An erasure is requested (a row), then an erasure marker is written to the device's
    /// partition of the fixes topic, behind every fix accepted before it; the erasure is
    /// carried out at the marker's position (`state = 'erased'`), by the request or by the
    /// evaluator that reaches the marker first. The evaluator drops a fix of an erased device
    /// at a lower offset of that partition, and starts the device afresh after it.
    ///
    /// `erased_events` names the events decided from the device's earlier fixes: whatever of
    /// them is still on an event topic (or read again from it) never becomes a delivery.
    /// Both are kept for the topics' retention, so that a replay of the topics honours them.
    ///
    /// A decision record run names the position of its first fix, so that a run written
    /// after the erasure by a recorder behind it is recognised by position too.
    /// (`device_erasures`, which compared clocks, is no longer read; it stays until the
    /// versions that read it are gone.)
    static let exactErasure = Migration(
        version: 35, name: "exact erasure",
        sql: """
            CREATE TABLE erasures (
                id bigserial PRIMARY KEY,
                project_id text NOT NULL,
                -- The digest of project and device (DeviceKey.recordKey): the id is not kept.
                device_key bigint NOT NULL,
                requested_at timestamptz NOT NULL DEFAULT now(),
                state text NOT NULL DEFAULT 'requested' CHECK (state IN ('requested', 'erased')),
                topic text,
                partition int,
                marker_offset bigint,
                erased_at timestamptz,
                -- What carrying it out removed, as the answer to the request reports it.
                removed jsonb,
                CHECK ((state = 'erased') = (marker_offset IS NOT NULL AND partition IS NOT NULL AND topic IS NOT NULL))
            );
            CREATE INDEX erasures_position ON erasures (topic, partition, marker_offset) WHERE state = 'erased';
            CREATE INDEX erasures_requested_at ON erasures (requested_at);
            CREATE INDEX erasures_device ON erasures (device_key) WHERE state = 'erased';
            CREATE TABLE erased_events (
                project_id text NOT NULL,
                event_id text NOT NULL,
                erasure_id bigint NOT NULL,
                PRIMARY KEY (project_id, event_id)
            );
            CREATE INDEX erased_events_erasure ON erased_events (erasure_id);
            ALTER TABLE decision_records ADD COLUMN fix_partition int, ADD COLUMN fix_offset bigint;
            """)
}
