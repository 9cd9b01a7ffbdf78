extension Migration {
    /// Each event's body kept once, beside its deliveries, instead of in every delivery.
    ///
    /// An event goes to every endpoint of its project with the same bytes, and a delivery
    /// row is rewritten three or four times (claimed, recorded, its successor let go): with
    /// the body inside, each row was about four times its size without it (876 bytes, 671
    /// of them the body), and an event to ten endpoints stored its body ten times. A
    /// delivery finds its event's body by (project, event), the key both tables share.
    static let eventPayloads = Migration(
        version: 27, name: "each event's payload stored once",
        sql: """
            CREATE TABLE event_payloads (
                project_id text NOT NULL,
                event_id text NOT NULL,
                payload text NOT NULL,
                PRIMARY KEY (project_id, event_id)
            );
            INSERT INTO event_payloads (project_id, event_id, payload)
            SELECT DISTINCT ON (project_id, event_id) project_id, event_id, payload
              FROM deliveries ORDER BY project_id, event_id, id;
            ALTER TABLE deliveries DROP COLUMN payload;
            """)
}
