extension Migration {
    /// A delivery's state named once, in the database (`delivery_states`), and the pairs of
    /// columns that make it checked where every statement writes them: a lease is an owner and
    /// an end together, and only a pending delivery holds one (see `DeliveryState`).
    static let deliveryStates = Migration(
        version: 39, name: "delivery states",
        sql: """
            ALTER TABLE deliveries ADD CONSTRAINT deliveries_lease_whole
                CHECK ((lease_owner IS NULL) = (leased_until IS NULL)) NOT VALID;
            ALTER TABLE deliveries ADD CONSTRAINT deliveries_lease_pending
                CHECK (status = 'pending' OR lease_owner IS NULL) NOT VALID;
            CREATE VIEW delivery_states AS
            SELECT d.id, d.project_id, d.endpoint_id,
                   CASE WHEN d.status <> 'pending' THEN d.status::text
                        WHEN d.leased_until > now() THEN 'in-flight'
                        WHEN NOT e.enabled THEN 'parked'
                        WHEN d.next_attempt_at < 'infinity' AND d.attempts = 0 THEN 'queued'
                        WHEN d.next_attempt_at < 'infinity' THEN 'retrying'
                        WHEN d.lease_owner IS NOT NULL THEN 'lease-lapsed'
                        ELSE 'behind' END AS state
              FROM deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id;
            """)
}
