extension Migration {
    /// The count of records each dead-letter partition sent back was written and never read.
    static let deadLetterRedriveCount = Migration(
        version: 32, name: "dead-letter redrives without their unread count",
        sql: """
            ALTER TABLE dead_letter_redrives DROP COLUMN redriven;
            """)
}
