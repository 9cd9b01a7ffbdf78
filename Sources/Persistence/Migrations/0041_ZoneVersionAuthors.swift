extension Migration {
    /// Who made a zones version and why: the id of the management key that replaced the zones
    /// through the API (null for versions made before, and for the command line's import on the
    /// database, which holds no key), and the message it gave, if any.
    static let zoneVersionAuthors = Migration(
        version: 41, name: "zone version authors",
        sql: """
            ALTER TABLE zone_document_versions ADD COLUMN author text;
            ALTER TABLE zone_document_versions ADD COLUMN message text;
            """)
}
