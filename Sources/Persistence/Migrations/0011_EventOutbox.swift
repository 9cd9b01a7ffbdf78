extension Migration {
    /// Events are written in the transaction that commits the device states which
    /// produced them, and published to Kafka only after that commit: an event exists
    /// only if its state does.
    static let eventOutbox = Migration(
        version: 11, name: "event outbox",
        sql: """
            CREATE TABLE event_outbox (
                id bigserial PRIMARY KEY,
                -- The consumer group and the fixes topic's partition the deciding fixes came from:
                -- that partition's owner publishes the events, in id order. -1: unknown.
                consumer_group text NOT NULL,
                source_topic text NOT NULL,
                source_partition integer NOT NULL,
                topic text NOT NULL,
                device_id text NOT NULL,
                event_id text NOT NULL,
                event_type text NOT NULL,
                event text NOT NULL,
                created_at timestamptz NOT NULL DEFAULT now()
            );
            CREATE INDEX event_outbox_source ON event_outbox (consumer_group, source_topic, source_partition, id);
            """)
}
