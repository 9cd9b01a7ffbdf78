import Foundation
import Persistence
import PostgresNIO
import Shared

/// A trigger that fails one evaluator group's writes to `consumer_offsets`, so that every
/// batch transaction of that group rolls back with the given SQLSTATE (40001 is retried
/// by the worker as a transient failure, so is 53300), until `until`, or until dropped.
struct OffsetCommitRefusal {
    let name: String
    let group: String
    let sqlState: String
    var until: Date?

    init(group: String, sqlState: String, until: Date? = nil) {
        self.name = "refuse_offsets_" + group.replacingOccurrences(of: "-", with: "_")
        self.group = group
        self.sqlState = sqlState
        self.until = until
    }

    /// Creates the function and its trigger, one statement each.
    var create: [String] {
        let condition = "NEW.consumer_group = '\(group)'" + (until.map { " AND now() < '\(RFC3339.format($0))'::timestamptz" } ?? "")
        return [
            """
            CREATE FUNCTION \(name)() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
              IF \(condition) THEN
                RAISE EXCEPTION 'offsets refused for the test' USING ERRCODE = '\(sqlState)';
              END IF;
              RETURN NEW;
            END $$
            """,
            "CREATE TRIGGER \(name) BEFORE INSERT OR UPDATE ON consumer_offsets FOR EACH ROW EXECUTE FUNCTION \(name)()",
        ]
    }

    var drop: [String] {
        ["DROP TRIGGER IF EXISTS \(name) ON consumer_offsets", "DROP FUNCTION IF EXISTS \(name)()"]
    }
}

extension PipelineHarness {
    /// Runs statements, one by one, on the harness's database.
    func execute(_ statements: [String]) async throws {
        let logger = logger
        try await Database.withTemporaryClient(configuration: try databaseConfiguration(), logger: logger) { database in
            for statement in statements {
                try await database.client.query(PostgresQuery(unsafeSQL: statement), logger: logger)
            }
        }
    }
}
