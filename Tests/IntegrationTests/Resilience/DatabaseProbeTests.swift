import BatchProcessing
import Foundation
import Logging
import Persistence
import ServiceLifecycle
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The probe that tells a failing dependency from a failing record answers within its
/// limit, even when the server stops answering (a cut path, a frozen server) and the
/// query itself does not end.
@Suite struct DatabaseProbeTests {
    /// The pool's one connection is to a server process that stops answering mid-session
    /// (SIGSTOP): the probe's query is sent and never answered, and its cancellation does
    /// not end it.
    @Test func probeOfAFrozenServerReturnsFalseAtItsLimit() async throws {
        var logger = Logger(label: "test.probe")
        logger.logLevel = .critical
        let database = Database(
            configuration: try DatabaseConfiguration(url: TestEnvironment.databaseURL, maximumConnections: 1), logger: logger)
        try await withServicesRunningOrCancelled([database]) {
            let backend = try await database.client.query("SELECT pg_backend_pid()", logger: logger).collect()[0].decode(Int32.self)
            // Answering, it is reachable (a limit a busy machine's answer stays within).
            #expect(await database.isReachable(within: .seconds(10)))
            kill(backend, SIGSTOP)
            defer { kill(backend, SIGCONT) }
            let started = ContinuousClock.now
            let reachable = await database.isReachable(within: .seconds(1))
            let took = ContinuousClock.now - started
            #expect(!reachable)
            // Generous for a busy machine; without the bound the probe waits as long as the query.
            #expect(took < .seconds(10), "the probe took \(took)")
        }
    }
}

/// Runs `body` with the services running, then cancels them without waiting for them to
/// finish (a pool stuck on a silent server may take long to stop).
private func withServicesRunningOrCancelled(_ services: [any Service], _ body: () async throws -> Void) async throws {
    let running = services.map { service in Task { try await service.run() } }
    defer { for task in running { task.cancel() } }
    try await body()
}
