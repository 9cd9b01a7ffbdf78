extension Migration {
    /// Device states in the engine's compact binary encoding, read and written for every
    /// device of every batch: a fraction of the JSON's size and cost. Rows written before
    /// keep their JSON in `state` until their device's next batch rewrites them; readers
    /// take either. Room left in each page (fillfactor) lets a state's rewrite stay on its
    /// page when no indexed column moves, which spares the index entries.
    static let binaryDeviceState = Migration(
        version: 12, name: "binary device state",
        sql: """
            ALTER TABLE device_states ADD COLUMN state_binary bytea;
            ALTER TABLE device_states ALTER COLUMN state DROP NOT NULL;
            ALTER TABLE device_states SET (fillfactor = 80);
            """)
}
