extension Migration {
    /// The `ETag` of a kept answer: restoring a zones version answers the version it made, and a
    /// resend of that request must get it again to send the `If-Match` of its next change.
    static let idempotentEntityTags = Migration(
        version: 30, name: "entity tags of idempotent answers",
        sql: """
            ALTER TABLE idempotency_keys ADD COLUMN etag text;
            """)
}
