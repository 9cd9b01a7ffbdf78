extension Migration {
    /// Which incarnation of each consumer group its members join: a group its coordinator
    /// wedged is left for the next one, and every member follows the number here.
    static let consumerGroupIncarnations = Migration(
        version: 14, name: "consumer group incarnations",
        sql: """
            CREATE TABLE consumer_group_incarnations (
                consumer_group text PRIMARY KEY,
                incarnation integer NOT NULL CHECK (incarnation > 0),
                updated_at timestamptz NOT NULL DEFAULT now()
            );
            """)
}
