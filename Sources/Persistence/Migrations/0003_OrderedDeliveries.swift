extension Migration {
    static let orderedDeliveries = Migration(
        version: 3, name: "deliveries in device order, short leases, attempt log",
        sql: """
            -- The event's per-device sequence: a device's deliveries to an endpoint go out in this order.
            -- NULL for rows queued before events were numbered; those wait for nothing.
            ALTER TABLE deliveries ADD COLUMN sequence bigint;

            -- Who holds a delivery for an attempt, and until when; renewed while the attempt runs,
            -- so a notifier that dies leaves its work to the others within one lease.
            ALTER TABLE deliveries ADD COLUMN lease_owner text;
            ALTER TABLE deliveries ADD COLUMN leased_until timestamptz;

            CREATE INDEX deliveries_device_order ON deliveries (endpoint_id, device_id, sequence);
            -- Finds each device's first pending delivery per endpoint, the one that may go next.
            CREATE INDEX deliveries_pending_heads ON deliveries (endpoint_id, device_id, sequence NULLS FIRST, id)
                WHERE status = 'pending';

            -- One row per attempt, for operators: GET /v1/deliveries/{id}.
            CREATE TABLE delivery_attempts (
                id bigserial PRIMARY KEY,
                delivery_id bigint NOT NULL REFERENCES deliveries(id) ON DELETE CASCADE,
                attempt integer NOT NULL,
                started_at timestamptz NOT NULL,
                latency_ms double precision NOT NULL,
                status_code integer,
                error text
            );
            CREATE INDEX delivery_attempts_delivery ON delivery_attempts (delivery_id, id);
            """)
}
