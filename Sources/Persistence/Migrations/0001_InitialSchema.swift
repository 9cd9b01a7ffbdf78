extension Migration {
    static let initialSchema = Migration(
        version: 1, name: "initial schema",
        sql: """
            CREATE TABLE projects (
                id text PRIMARY KEY,
                name text NOT NULL,
                created_at timestamptz NOT NULL DEFAULT now()
            );

            -- Keys are stored hashed; `kind` separates device keys (send fixes)
            -- from management keys (change zones and endpoints).
            CREATE TABLE api_keys (
                key_hash text PRIMARY KEY,
                project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
                kind text NOT NULL CHECK (kind IN ('device', 'management')),
                created_at timestamptz NOT NULL DEFAULT now()
            );

            CREATE TABLE zones (
                project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
                id text NOT NULL,
                name text NOT NULL,
                description text NOT NULL DEFAULT '',
                custom_data jsonb NOT NULL DEFAULT '{}',
                minimum_retrigger_time double precision NOT NULL DEFAULT 0,
                check_out_enabled boolean NOT NULL DEFAULT false,
                enabled boolean NOT NULL DEFAULT true,
                conditions jsonb,
                active_schedule jsonb,
                beacons jsonb NOT NULL DEFAULT '[]',
                position integer NOT NULL DEFAULT 0,
                updated_at timestamptz NOT NULL DEFAULT now(),
                PRIMARY KEY (project_id, id)
            );

            CREATE TABLE fences (
                project_id text NOT NULL,
                zone_id text NOT NULL,
                id text NOT NULL,
                name text NOT NULL DEFAULT '',
                description text NOT NULL DEFAULT '',
                geometry jsonb NOT NULL,
                radius double precision,
                position integer NOT NULL DEFAULT 0,
                PRIMARY KEY (project_id, zone_id, id),
                FOREIGN KEY (project_id, zone_id) REFERENCES zones(project_id, id) ON DELETE CASCADE
            );

            -- Bumped by every change to zones, so evaluators notice with one cheap query.
            CREATE TABLE zone_catalog_version (
                singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
                version bigint NOT NULL
            );
            INSERT INTO zone_catalog_version (version) VALUES (0);

            -- What the engine remembers per device, plus when a stale check-out is due.
            CREATE TABLE device_states (
                project_id text NOT NULL,
                device_id text NOT NULL,
                state jsonb NOT NULL,
                last_fix_at timestamptz,
                stale_at timestamptz,
                updated_at timestamptz NOT NULL DEFAULT now(),
                PRIMARY KEY (project_id, device_id)
            );
            CREATE INDEX device_states_stale_at ON device_states (stale_at) WHERE stale_at IS NOT NULL;

            -- Consumer offsets committed in the same transaction as the state they produced.
            CREATE TABLE consumer_offsets (
                consumer_group text NOT NULL,
                topic text NOT NULL,
                partition integer NOT NULL,
                next_offset bigint NOT NULL,
                updated_at timestamptz NOT NULL DEFAULT now(),
                PRIMARY KEY (consumer_group, topic, partition)
            );

            CREATE TABLE webhook_endpoints (
                id text PRIMARY KEY,
                project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
                url text NOT NULL,
                -- All secrets currently valid; several during a key rotation.
                secrets text[] NOT NULL,
                enabled boolean NOT NULL DEFAULT true,
                created_at timestamptz NOT NULL DEFAULT now()
            );
            CREATE INDEX webhook_endpoints_project ON webhook_endpoints (project_id);

            -- One row per (endpoint, event): the unique key makes redelivered events harmless.
            CREATE TABLE deliveries (
                id bigserial PRIMARY KEY,
                endpoint_id text NOT NULL REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
                project_id text NOT NULL,
                event_id text NOT NULL,
                event_type text NOT NULL,
                device_id text NOT NULL,
                -- When the check-in or check-out happened: a device's deliveries go out in this order.
                event_time timestamptz NOT NULL,
                -- For a check-out, the check-in it closes: sent only after that check-in's delivery.
                check_in_id text,
                payload text NOT NULL,
                status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
                attempts integer NOT NULL DEFAULT 0,
                next_attempt_at timestamptz NOT NULL DEFAULT now(),
                last_status_code integer,
                last_error text,
                created_at timestamptz NOT NULL DEFAULT now(),
                delivered_at timestamptz,
                UNIQUE (endpoint_id, event_id)
            );
            CREATE INDEX deliveries_due ON deliveries (next_attempt_at) WHERE status = 'pending';
            CREATE INDEX deliveries_project ON deliveries (project_id, created_at);
            """)
}
