extension Migration {
    /// The answers to management requests sent with an `Idempotency-Key`, so that a client
    /// that resends one (after a timeout, say) gets the first answer instead of a second
    /// endpoint or key. A row without a status is a request still running: inserting it first
    /// is what keeps two identical requests from both running.
    static let idempotencyKeys = Migration(
        version: 21, name: "idempotency keys",
        sql: """
            CREATE TABLE idempotency_keys (
                -- 'operator' or 'project:<id>': one client's keys never meet another's.
                scope text NOT NULL,
                key text NOT NULL,
                method text NOT NULL,
                path text NOT NULL,
                -- SHA-256 of the request body: the same key with another body is refused.
                body_hash text NOT NULL,
                created_at timestamptz NOT NULL DEFAULT now(),
                -- Null while the first request runs.
                status integer,
                content_type text,
                location text,
                -- Sealed with CHECKIN_SECRET_KEY, as webhook secrets are: an answer may show one,
                -- or a new API key.
                body text,
                PRIMARY KEY (scope, key)
            );
            CREATE INDEX idempotency_keys_created_at ON idempotency_keys (created_at);
            """)
}
