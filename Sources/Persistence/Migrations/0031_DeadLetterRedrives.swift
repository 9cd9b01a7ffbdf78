extension Migration {
    /// How far each dead-letter partition has been sent back to the pipeline (`checkin
    /// dead-letters redrive`), so that a record is sent back once.
    static let deadLetterRedrives = Migration(
        version: 31, name: "dead-letter redrives",
        sql: """
            CREATE TABLE dead_letter_redrives (
                topic text NOT NULL,
                partition int NOT NULL,
                next_offset bigint NOT NULL,
                redriven bigint NOT NULL DEFAULT 0,
                updated_at timestamptz NOT NULL DEFAULT now(),
                PRIMARY KEY (topic, partition)
            );
            """)
}
