extension Migration {
    /// Operators' metrics count undelivered deliveries per endpoint every few seconds;
    /// delivered rows, the vast majority, stay out of this index.
    static let undeliveredIndex = Migration(
        version: 6, name: "index of undelivered deliveries",
        sql: """
            CREATE INDEX deliveries_undelivered ON deliveries (endpoint_id, status) WHERE status <> 'delivered';
            """)
}
