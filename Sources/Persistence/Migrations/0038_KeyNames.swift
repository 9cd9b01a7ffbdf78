extension Migration {
    /// A key's name, what its holders call it (`ios-app`, `ci`): null for keys made without one.
    static let keyNames = Migration(
        version: 38, name: "key names",
        sql: """
            ALTER TABLE api_keys ADD COLUMN name text;
            """)
}
