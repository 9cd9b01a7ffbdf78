import Persistence
import ServiceSupport
import Testing

/// The migrations keep the schema usable by the release before them (docs/releases.md), and the
/// check that says so refuses each kind of contracting change unless it is declared.
@Suite struct MigrationPolicyTests {
    static let policy = try! MigrationPolicy(release: Release.version)
    static var next: Int { Migration.all.last!.version + 1 }

    static func migration(_ sql: String, contracts: [Migration.Contraction] = []) -> Migration {
        Migration(version: next, name: "sample", sql: sql, contracts: contracts)
    }

    @Test func everyMigrationKeepsThePolicy() {
        let violations = Self.policy.violations(in: Migration.all)
        #expect(violations.isEmpty, "\(violations.map(\.description).joined(separator: "\n"))")
    }

    @Test func onlyLandedMigrationsAreGrandfathered() {
        let versions = Set(Migration.all.map(\.version))
        for (version, reason) in MigrationPolicy.grandfathered {
            #expect(version <= MigrationPolicy.grandfatheredThrough)
            #expect(versions.contains(version), "migration \(version) is grandfathered but does not exist")
            #expect(!reason.isEmpty && !reason.contains("\n"))
        }
    }

    /// A contracting statement, the subject it is refused about, and whether a declaration can let it through.
    struct Forbidden: Sendable, CustomTestStringConvertible {
        var sql: String
        var subject: String
        var declarable = true
        var testDescription: String { sql }
    }

    static let forbidden: [Forbidden] = [
        Forbidden(sql: "DROP TABLE device_erasures;", subject: "device_erasures"),
        Forbidden(sql: "DROP TABLE IF EXISTS public.device_erasures CASCADE;", subject: "device_erasures"),
        Forbidden(sql: "ALTER TABLE deliveries DROP COLUMN last_error;", subject: "deliveries.last_error"),
        Forbidden(sql: "ALTER TABLE deliveries DROP last_error;", subject: "deliveries.last_error"),
        Forbidden(sql: "DROP INDEX deliveries_failed;", subject: "deliveries_failed"),
        Forbidden(sql: "ALTER TABLE deliveries RENAME COLUMN last_error TO failure;", subject: "deliveries.last_error"),
        Forbidden(sql: "ALTER TABLE deliveries RENAME TO webhook_deliveries;", subject: "deliveries"),
        Forbidden(sql: "ALTER INDEX deliveries_failed RENAME TO deliveries_failures;", subject: "deliveries_failed"),
        Forbidden(sql: "ALTER TABLE deliveries ALTER COLUMN attempts TYPE bigint;", subject: "deliveries.attempts"),
        Forbidden(sql: "ALTER TABLE deliveries ALTER attempts SET DATA TYPE bigint;", subject: "deliveries.attempts"),
        Forbidden(sql: "ALTER TABLE deliveries ALTER COLUMN last_error SET NOT NULL;", subject: "deliveries.last_error"),
        Forbidden(sql: "ALTER TABLE deliveries ALTER COLUMN event_type DROP NOT NULL;", subject: "deliveries.event_type"),
        Forbidden(sql: "ALTER TABLE deliveries ALTER COLUMN attempts DROP DEFAULT;", subject: "deliveries.attempts"),
        Forbidden(sql: "ALTER TABLE deliveries ADD COLUMN priority integer NOT NULL;", subject: "deliveries.priority"),
        Forbidden(
            sql: "ALTER TABLE deliveries ADD COLUMN note text, ADD COLUMN priority integer NOT NULL;",
            subject: "deliveries.priority"),
        Forbidden(
            sql: "ALTER TABLE deliveries DROP CONSTRAINT deliveries_status_check;", subject: "deliveries.deliveries_status_check"),
        Forbidden(
            sql: "ALTER TABLE deliveries ADD CONSTRAINT deliveries_attempts_check CHECK (attempts >= 0);",
            subject: "deliveries.deliveries_attempts_check"),
        Forbidden(
            sql: "ALTER TABLE deliveries ADD CONSTRAINT deliveries_event_unique UNIQUE (event_id) NOT VALID;",
            subject: "deliveries.deliveries_event_unique"),
        Forbidden(
            sql: "ALTER TABLE deliveries ADD FOREIGN KEY (project_id) REFERENCES projects (id);", subject: "deliveries FOREIGN"),
        Forbidden(sql: "CREATE UNIQUE INDEX deliveries_event ON deliveries (event_id);", subject: "deliveries_event"),
        Forbidden(sql: "TRUNCATE deliveries;", subject: "deliveries"),
        Forbidden(sql: "DELETE FROM deliveries;", subject: "deliveries"),
        Forbidden(sql: "UPDATE deliveries SET attempts = (SELECT 0 WHERE true);", subject: "deliveries"),
        Forbidden(sql: "CREATE OR REPLACE VIEW pending AS SELECT id FROM deliveries;", subject: "pending"),
        Forbidden(
            sql: "CREATE INDEX CONCURRENTLY deliveries_device ON deliveries (device_id);", subject: "CREATE INDEX CONCURRENTLY",
            declarable: false),
        Forbidden(sql: "DROP INDEX CONCURRENTLY deliveries_failed;", subject: "DROP INDEX CONCURRENTLY", declarable: false),
        Forbidden(sql: "VACUUM deliveries;", subject: "VACUUM", declarable: false),
        Forbidden(sql: "ALTER TABLE deliveries OWNER TO someone;", subject: "ALTER TABLE deliveries OWNER", declarable: false),
        Forbidden(sql: "DO $$ BEGIN PERFORM 1; END $$;", subject: "DO", declarable: false),
    ]

    @Test(arguments: forbidden)
    func contractingStatementIsRefusedNamingMigrationAndStatement(_ sample: Forbidden) {
        let sql = "CREATE TABLE notes (id bigint PRIMARY KEY);\n" + sample.sql
        let violations = Self.policy.violations(in: Migration.all + [Self.migration(sql)])
        #expect(violations.count == 1, "\(violations)")
        let description = violations.first?.description ?? ""
        #expect(description.hasPrefix("migration \(Self.next) (sample) refused: "), "\(description)")
        #expect(description.hasSuffix(": " + sample.sql), "\(description)")
        #expect(description.contains(sample.subject), "\(description)")
    }

    @Test(arguments: forbidden)
    func declaredContractionOfAGoneReleasePasses(_ sample: Forbidden) {
        let declared = Self.migration(sample.sql, contracts: [.init(sample.subject, lastReadBy: "0.7")])
        let violations = Self.policy.violations(in: [declared])
        if sample.declarable {
            #expect(violations.isEmpty, "\(violations)")
        } else {
            // Postgres would refuse it in the migrator's transaction, or the check cannot tell what it does.
            #expect(violations.count == 2, "\(violations)")
        }
    }

    @Test func contractionOfWhatTheRunningReleaseReadsIsRefused() throws {
        let policy = try MigrationPolicy(release: "0.9.0")
        for lastReadBy in ["0.9", "0.10", "1.0", "soon"] {
            let migration = Self.migration(
                "DROP TABLE device_erasures;", contracts: [.init("device_erasures", lastReadBy: lastReadBy)])
            let violations = policy.violations(in: [migration])
            #expect(violations.count == 1)
            #expect(violations.first?.description.contains("last read by \(lastReadBy)") == true, "\(violations)")
        }
        let migration = Self.migration("DROP TABLE device_erasures;", contracts: [.init("device_erasures", lastReadBy: "0.8")])
        #expect(policy.violations(in: [migration]).isEmpty)
    }

    @Test func declaredContractionThatNoStatementMakesIsRefused() {
        let migration = Self.migration(
            "ALTER TABLE deliveries ADD COLUMN note text;", contracts: [.init("deliveries.last_error", lastReadBy: "0.7")])
        let violations = Self.policy.violations(in: [migration])
        #expect(
            violations.map(\.description) == [
                "migration \(Self.next) (sample) declares a contraction of deliveries.last_error that none of its statements makes"
            ])
    }

    static let allowed: [String] = [
        "ALTER TABLE deliveries ADD COLUMN note text;",
        "ALTER TABLE deliveries ADD COLUMN IF NOT EXISTS note text REFERENCES projects (id);",
        "ALTER TABLE deliveries ADD COLUMN priority integer NOT NULL DEFAULT 0;",
        "ALTER TABLE deliveries ADD COLUMN a text, ADD COLUMN b numeric(10, 2) DEFAULT 1;",
        "ALTER TABLE device_states ADD COLUMN n bigserial NOT NULL;",
        "CREATE INDEX deliveries_device ON deliveries (device_id) WHERE status = 'pending';",
        "CREATE TABLE notes (id bigint PRIMARY KEY, body text NOT NULL);\nCREATE UNIQUE INDEX notes_body ON notes (body);",
        "CREATE TABLE notes (id bigint);\nALTER TABLE notes RENAME COLUMN id TO note_id;\nALTER TABLE notes DROP COLUMN note_id;\nDROP TABLE notes;",
        "CREATE INDEX deliveries_new ON deliveries (id);\nDROP INDEX deliveries_new;",
        "ALTER TABLE deliveries ADD CONSTRAINT deliveries_attempts_check CHECK (attempts >= 0) NOT VALID;",
        "ALTER TABLE deliveries ADD CONSTRAINT deliveries_project FOREIGN KEY (project_id) REFERENCES projects (id) NOT VALID;",
        "ALTER TABLE deliveries VALIDATE CONSTRAINT deliveries_attempts_check;",
        "UPDATE deliveries SET note = '' WHERE note IS NULL;",
        "INSERT INTO notes (id) SELECT id FROM deliveries;",
        "ALTER TABLE deliveries SET (fillfactor = 70);",
        "ALTER TABLE deliveries ALTER COLUMN status SET STATISTICS 0;",
        "ALTER TABLE deliveries ALTER COLUMN attempts SET DEFAULT 1;",
        "COMMENT ON TABLE deliveries IS 'one row per endpoint and event';",
        "-- DROP TABLE deliveries;\nALTER TABLE deliveries ADD COLUMN note text; -- DROP COLUMN soon",
        #"ALTER TABLE deliveries ADD COLUMN "DROP" text;"#,
    ]

    @Test(arguments: allowed)
    func additiveStatementPasses(_ sql: String) {
        let violations = Self.policy.violations(in: Migration.all + [Self.migration(sql)])
        #expect(violations.isEmpty, "\(violations)")
    }

    @Test func grandfatheringIsForLandedMigrationsOnly() throws {
        let policy = try MigrationPolicy(release: "0.9.0", grandfathered: [Self.next: "too late"])
        let violations = policy.violations(in: [Self.migration("DROP TABLE device_erasures;")])
        #expect(violations.count == 2, "\(violations)")
        #expect(violations.contains { $0.description.contains("only migrations up to 37") })
    }

    @Test func grandfatheredMigrationWithNothingToExcuseIsReported() throws {
        let policy = try MigrationPolicy(release: "0.9.0", grandfathered: [1: "nothing"])
        let violations = policy.violations(in: [Migration.all[0]])
        #expect(violations.map(\.version) == [1])
    }

    @Test func versionsMustGrow() {
        let last = Migration.all.last!
        let violations = Self.policy.violations(in: Migration.all + [last])
        #expect(
            violations.map(\.description) == [
                "migration \(last.version) (\(last.name)) comes after migration \(last.version): versions must grow, each used once"
            ])
    }
}
