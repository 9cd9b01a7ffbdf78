extension Migration {
    /// A replay queues a delivery again with its attempts counted from 1 (the back-off starts
    /// over), so the attempt log keeps each replay and the round each attempt belongs to:
    /// an operator reading it sees which "attempt 1" came after which replay.
    static let deliveryReplays = Migration(
        version: 22, name: "delivery replays",
        sql: """
            -- One row each time a delivery was queued again; the delivery's next attempts form a new round.
            CREATE TABLE delivery_replays (
                id bigserial PRIMARY KEY,
                delivery_id bigint NOT NULL REFERENCES deliveries(id) ON DELETE CASCADE,
                replayed_at timestamptz NOT NULL DEFAULT now()
            );
            CREATE INDEX delivery_replays_delivery ON delivery_replays (delivery_id, id);
            -- 1 for the attempts before any replay, 2 for those after the first replay, and so on.
            ALTER TABLE delivery_attempts ADD COLUMN round integer NOT NULL DEFAULT 1;
            """)
}
