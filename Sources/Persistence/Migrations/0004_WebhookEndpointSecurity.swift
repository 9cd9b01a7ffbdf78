extension Migration {
    /// Webhook secrets move to a table of their own, one row per secret, so that a
    /// rotation can let the previous secret sign until its window ends. The values
    /// are copied as they are (plaintext `whsec_`): encrypting needs the key, which
    /// SQL does not have, so each service seals them at start (`sealStoredSecrets`).
    /// Endpoints record why and when they were disabled.
    static let webhookEndpointSecurity = Migration(
        version: 4, name: "webhook secrets sealed and rotatable, endpoint state",
        sql: """
            CREATE TABLE webhook_secrets (
                id bigserial PRIMARY KEY,
                endpoint_id text NOT NULL REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
                -- AES-GCM sealed (sealed:v1:…); a whsec_ value is waiting to be sealed.
                sealed text NOT NULL,
                created_at timestamptz NOT NULL DEFAULT now(),
                -- Set when a newer secret is rotated in: this one signs until then.
                expires_at timestamptz
            );
            CREATE INDEX webhook_secrets_endpoint ON webhook_secrets (endpoint_id);

            INSERT INTO webhook_secrets (endpoint_id, sealed, created_at)
            SELECT e.id, s.secret, e.created_at
              FROM webhook_endpoints e, unnest(e.secrets) WITH ORDINALITY AS s(secret, position)
             ORDER BY e.created_at, s.position;

            ALTER TABLE webhook_endpoints DROP COLUMN secrets;
            ALTER TABLE webhook_endpoints ADD COLUMN disabled_reason text;
            ALTER TABLE webhook_endpoints ADD COLUMN disabled_at timestamptz;

            -- The key `checkin dev` and `checkin demo` generate when CHECKIN_SECRET_KEY is
            -- unset; production services never read or write it.
            CREATE TABLE local_secret_key (
                singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
                key text NOT NULL,
                created_at timestamptz NOT NULL DEFAULT now()
            );
            """)
}
