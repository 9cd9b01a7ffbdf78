extension Migration {
    /// API keys get an id to be named by (listed, revoked, rotated) without their secret,
    /// the first characters of the key so that an operator can tell which one a client holds,
    /// and the times of their life: last use (recorded coarsely), expiry (a rotated key's
    /// overlap) and revocation. Keys made before have no prefix: only their hash was kept.
    static let apiKeyLifecycle = Migration(
        version: 20, name: "api key lifecycle",
        sql: """
            ALTER TABLE api_keys ADD COLUMN id text;
            UPDATE api_keys SET id = 'key_' || substr(md5(random()::text || key_hash), 1, 20);
            ALTER TABLE api_keys ALTER COLUMN id SET NOT NULL;
            ALTER TABLE api_keys ADD CONSTRAINT api_keys_id_unique UNIQUE (id);
            ALTER TABLE api_keys ADD COLUMN prefix text;
            ALTER TABLE api_keys ADD COLUMN last_used_at timestamptz;
            ALTER TABLE api_keys ADD COLUMN expires_at timestamptz;
            ALTER TABLE api_keys ADD COLUMN revoked_at timestamptz;
            CREATE INDEX api_keys_project ON api_keys (project_id, created_at);
            """)
}
