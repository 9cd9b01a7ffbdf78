import Foundation
import Testing

/// A Postgres that is not there, or that refuses the database asked for, is reported at
/// once by address (never with the password) and cause: by a management command and by
/// `checkin dev` alike, within 10 seconds, not after the connection pool's minute of retries.
@Suite struct UnreachableDatabaseTests {
    @Test(arguments: [["projects", "list"], ["dev"]])
    func nothingListeningIsReportedByAddressWithinTenSeconds(_ arguments: [String]) async throws {
        let started = ContinuousClock.now
        let outcome = try await CommandOutcome.run(
            arguments,
            environment: [
                "CHECKIN_DATABASE_URL": "postgres://checkin:not-to-be-shown@127.0.0.1:1/checkin",
                "CHECKIN_KAFKA_BROKERS": "127.0.0.1:1", "CHECKIN_HTTP_PORT": "0",
            ])
        let took = ContinuousClock.now - started
        #expect(outcome.exitCode != 0)
        #expect(took < .seconds(10), "\(arguments.joined(separator: " ")) took \(took)")
        let said = outcome.standardError + outcome.standardOutput
        #expect(said.contains("checkin@127.0.0.1:1/checkin") && said.contains("refused"), "\(said)")
        #expect(!said.contains("not-to-be-shown"), "\(said)")
    }

    /// A database that does not exist cannot come by waiting: said at once.
    @Test func aMissingDatabaseIsReportedAtOnce() async throws {
        guard var url = URLComponents(string: TestEnvironment.databaseURL) else { throw TestFailure("no database URL") }
        url.path = "/no_such_database_here"
        let started = ContinuousClock.now
        let outcome = try await CommandOutcome.run(["projects", "list"], environment: ["CHECKIN_DATABASE_URL": url.string!])
        let took = ContinuousClock.now - started
        #expect(outcome.exitCode != 0)
        #expect(took < .seconds(5), "took \(took)")
        #expect(outcome.standardError.contains("no such database") && outcome.standardError.contains("/no_such_database_here"),
            "\(outcome.standardError)")
    }
}
