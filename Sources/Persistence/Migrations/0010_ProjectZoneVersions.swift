extension Migration {
    /// Each project's zones carry the catalog version of their last replacement, so an
    /// evaluator rebuilds only the projects that changed; the time of that replacement
    /// lets a project's replacements be spaced out.
    static let projectZoneVersions = Migration(
        version: 10, name: "per-project zone versions",
        sql: """
            -- The catalog version at which the project's zones were last replaced; 0 before any.
            ALTER TABLE projects ADD COLUMN zones_version bigint NOT NULL DEFAULT 0;
            ALTER TABLE projects ADD COLUMN zones_replaced_at timestamptz;
            UPDATE projects SET zones_version = (SELECT version FROM zone_catalog_version)
            WHERE EXISTS (SELECT 1 FROM zones WHERE zones.project_id = projects.id);
            """)
}
