extension Migration {
    /// Every accepted zones document of a project is kept whole, numbered 1, 2, 3 … per
    /// project, so that a project can see what its zones were and roll back to them. A
    /// project's current zones become its version 1, so that projects with zones from before
    /// have a version to roll back to.
    static let zoneDocumentVersions = Migration(
        version: 19, name: "zone document versions",
        sql: """
            CREATE TABLE zone_document_versions (
                project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
                version bigint NOT NULL CHECK (version > 0),
                created_at timestamptz NOT NULL DEFAULT now(),
                zone_count integer NOT NULL,
                -- The zones document as accepted (ZonesDocument's JSON).
                document jsonb NOT NULL,
                PRIMARY KEY (project_id, version)
            );
            INSERT INTO zone_document_versions (project_id, version, created_at, zone_count, document)
            SELECT p.id, 1, coalesce(p.zones_replaced_at, now()), count(*),
                   -- Absent members (a fence without a radius, a zone without conditions) are left out,
                   -- as the document's encoder leaves them out.
                   jsonb_build_object('zones', jsonb_agg(jsonb_strip_nulls(jsonb_build_object(
                       'id', z.id, 'name', z.name, 'description', z.description, 'customData', z.custom_data,
                       'minimumRetriggerTime', z.minimum_retrigger_time, 'checkOutEnabled', z.check_out_enabled,
                       'enabled', z.enabled, 'conditions', z.conditions, 'activeSchedule', z.active_schedule,
                       'beacons', z.beacons,
                       'fences', coalesce(
                           (SELECT jsonb_agg(jsonb_build_object(
                                       'id', f.id, 'name', f.name, 'description', f.description, 'geometry', f.geometry,
                                       'radius', f.radius) ORDER BY f.position, f.id)
                              FROM fences f WHERE f.project_id = z.project_id AND f.zone_id = z.id),
                           '[]'::jsonb))) ORDER BY z.position, z.id))
              FROM projects p JOIN zones z ON z.project_id = p.id
             GROUP BY p.id, p.zones_replaced_at;
            """)
}
