import CommandSupport
import Foundation
import Persistence
import PostgresNIO

/// How many of a load's fixes the evaluators recorded a decision for (`--count-decisions`):
/// read from the decision records in the database, so that it holds whatever evaluator
/// processes came and went (their /metrics counters start again with each process). Every
/// fix an evaluator commits, evaluated, late or duplicate, gets a record, written after its
/// batch commits and before a graceful stop ends; a fix with none was never evaluated.
struct DecisionCount: Codable, Sendable {
    /// Distinct fixes of the run with a decision record.
    var decidedFixes: Int
    /// Decision records of the run: more than `decidedFixes` when fixes were evaluated again
    /// (read again after a rebalance, before their partition's offsets were committed).
    var records: Int
    /// Fixes sent with no decision record.
    var lostFixes: Int
    /// The first of them (at most 50), by fix id (`load-<device>-<step>`), oldest first.
    var lostFixIds: [String] = []
    /// Where each of those is (``LostFixTrace``): in the fixes topic or not, and where.
    var lostFixPlaces: [String] = []

    /// Counts until every fix has its record, or the count stops growing for 30 s, or `timeout`.
    /// - Parameter since: the run's start: records of earlier runs (the same fix ids) are older.
    static func wait(trip: LoadTrip, since: Date, timeout: Duration) async throws -> DecisionCount {
        let (project, fixes) = (trip.project, trip.fixes)
        return try await withConfiguredDatabase { database, logger in
            let deadline = ContinuousClock.now + timeout
            var last = (decided: -1, records: 0)
            var grew = ContinuousClock.now
            while true {
                let query: PostgresQuery = """
                    SELECT count(DISTINCT substring(line FROM '"fixId":"([^"]*)"')), count(*)
                      FROM decision_records, regexp_split_to_table(records, E'\\n') AS line
                     WHERE project_id = \(project) AND first_evaluated_at >= \(since) AND line <> ''
                    """
                var counted = (decided: 0, records: 0)
                for try await (decided, records) in try await database.client.query(query, logger: logger).decode((Int64, Int64).self) {
                    counted = (Int(decided), Int(records))
                }
                if counted.decided != last.decided { grew = .now }
                last = counted
                if counted.decided >= fixes || ContinuousClock.now - grew > .seconds(30) || ContinuousClock.now > deadline {
                    var count = DecisionCount(
                        decidedFixes: counted.decided, records: counted.records, lostFixes: max(0, fixes - counted.decided))
                    if count.lostFixes > 0 {
                        let decided: PostgresQuery = """
                            SELECT DISTINCT substring(line FROM '"fixId":"([^"]*)"')
                              FROM decision_records, regexp_split_to_table(records, E'\\n') AS line
                             WHERE project_id = \(project) AND first_evaluated_at >= \(since) AND line <> ''
                            """
                        var ids = Set<String>()
                        for try await id in try await database.client.query(decided, logger: logger).decode(String?.self) {
                            if let id { ids.insert(id) }
                        }
                        count.lostFixIds = Array(
                            (0..<fixes).lazy.compactMap { trip.fix($0).fixId }.filter { !ids.contains($0) }.prefix(50))
                    }
                    return count
                }
                try await Task.sleep(for: .seconds(2))
            }
        }
    }
}
