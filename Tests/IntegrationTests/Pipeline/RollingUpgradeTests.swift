import AsyncHTTPClient
import Foundation
import Logging
import Persistence
import PostgresNIO
import ServiceSupport
import Shared
import Testing

extension Migration {
    /// What the next release's migration may be under the compatibility policy: a nullable
    /// column on the two tables the pipeline writes most, one with a default, a new table and
    /// a new index. The services of this commit know none of it.
    static let nextRelease = Migration(
        version: Migration.all.last!.version + 1, name: "additions of the next release",
        sql: """
            ALTER TABLE deliveries ADD COLUMN next_release_note text;
            ALTER TABLE deliveries ADD COLUMN next_release_rank integer NOT NULL DEFAULT 0;
            ALTER TABLE device_states ADD COLUMN next_release_note text;
            CREATE TABLE next_release_notes (
                id bigserial PRIMARY KEY,
                device_id text NOT NULL,
                noted_at timestamptz NOT NULL DEFAULT now()
            );
            CREATE INDEX deliveries_next_release_note ON deliveries (endpoint_id, next_release_note)
                WHERE next_release_note IS NOT NULL;
            """)

    /// The same with a column dropped that this commit's notifier reads: what the policy refuses.
    static let contractingNextRelease = Migration(
        version: nextRelease.version, name: nextRelease.name,
        sql: nextRelease.sql + "\nALTER TABLE deliveries DROP COLUMN last_error;")
}

/// A rolling upgrade: the next release migrates first while this release's services run, and
/// they go on without a hitch (docs/releases.md). Every webhook arrives once, in order per
/// device, `/ready` stays true, and this release's migrator, given the newer schema, starts.
@Suite(.serialized) struct RollingUpgradeTests {
    @Test func nextMigrationKeepsThePolicyAndAContractingOneDoesNot() throws {
        let policy = try MigrationPolicy(release: Release.version)
        #expect(policy.violations(in: Migration.all + [.nextRelease]).isEmpty)
        let refused = policy.violations(in: Migration.all + [.contractingNextRelease])
        #expect(
            refused.map(\.description).map { $0.hasPrefix("migration \(Migration.nextRelease.version) ") && $0.contains("last_error") }
                == [true], "\(refused)")
    }

    @Test func servicesRunOnWhileTheNextReleaseMigrates() async throws {
        var configured = PipelineHarness()
        configured.databaseURL = try await PipelineHarness.freshDatabaseURL()
        let harness = configured
        try await harness.prepare()
        let logDirectory = try harness.makeLogDirectory()
        let (logger, deviceKey) = (harness.logger, harness.deviceKey)
        try await withRegisteredReceiver(harness) { received in
            func process(_ name: String, service: String, port: Int? = nil) -> ServiceProcess {
                var environment = harness.processEnvironment
                if let port { environment["CHECKIN_HTTP_PORT"] = String(port) }
                return ServiceProcess(name: name, arguments: [service], environment: environment, logDirectory: logDirectory)
            }
            func withDatabase<T: Sendable>(_ body: @Sendable (Database) async throws -> T) async throws -> T {
                try await Database.withTemporaryClient(configuration: try harness.databaseConfiguration(), logger: logger, body)
            }
            let ports = ["ingest": try freePort(), "evaluator": try freePort(), "notifier": try freePort()]
            var services = ports.map { name, port in process(name, service: name, port: port) }
            try await withProcessesStopped(services) {
                for service in services { try service.start() }
                do {
                    for port in ports.values { try await waitUntil("ready on \(port)", within: .seconds(90)) { await ready(port) } }

                    let url = "http://127.0.0.1:\(ports["ingest"]!)/v1/fixes"
                    let before = (0..<6).map { _ in TestTrip(projectId: harness.projectId) }
                    let during = (0..<6).map { _ in TestTrip(projectId: harness.projectId) }
                    let after = (0..<6).map { _ in TestTrip(projectId: harness.projectId) }
                    @Sendable func send(_ trips: [TestTrip], fix index: Int) async throws {
                        let body = try JSONSerialization.data(withJSONObject: ["fixes": trips.map { $0.fix(index) }])
                        let answer = try await post(body, to: url, key: deviceKey)
                        #expect(answer.status == 202, "\(answer.body)")
                    }

                    // Running, with check-ins delivered, before anything changes.
                    for index in 0..<5 { try await send(before, fix: index) }
                    try await received.wait(timeout: .seconds(120)) { payloads in
                        before.allSatisfy { trip in payloads.contains { $0.data.deviceId == trip.deviceId } }
                    }

                    // The next release migrates while fixes keep coming and `/ready` is watched.
                    let watch = ReadinessWatch(ports: Array(ports.values))
                    try await withThrowingTaskGroup(of: Void.self) { tasks in
                        tasks.addTask { await watch.run() }
                        let sender = Task {
                            for index in 0..<9 {
                                if index + 5 < 9 { try await send(before, fix: index + 5) }
                                try await send(during, fix: index)
                                try await Task.sleep(for: .milliseconds(300))
                            }
                        }
                        defer { sender.cancel() }
                        try await Task.sleep(for: .milliseconds(700))
                        let applied = try await withDatabase { database in
                            try await Migrator(database: database, logger: logger).migrate(Migration.all + [.nextRelease])
                        }
                        #expect(applied == [Migration.nextRelease.version])
                        try await sender.value
                        try await received.wait(timeout: .seconds(120)) { payloads in
                            (before + during).allSatisfy { $0.isComplete(payloads) }
                        }
                        await watch.stop()
                        try await tasks.waitForAll()
                    }
                    let unready = await watch.failures
                    #expect(unready.isEmpty, "/ready was not true while the next release migrated: \(unready)")
                    #expect(await watch.checks > 10)

                    // This release's migrator given the newer schema applies nothing and undoes nothing,
                    // and a service of this release starts against it, saying so.
                    let versions = try await withDatabase { database in try await schemaVersions(database, logger: logger) }
                    #expect(versions == Migration.all.map(\.version) + [Migration.nextRelease.version])
                    let again = try await withDatabase { database in try await Migrator(database: database, logger: logger).migrate() }
                    #expect(again == [])
                    #expect(try await withDatabase { database in try await schemaVersions(database, logger: logger) } == versions)
                    let migrate = process("migrate", service: "migrate")
                    try migrate.start()
                    #expect(await migrate.exitStatus(within: .seconds(60)) == 0, "\(migrate.logTail())")
                    #expect(migrate.log.contains("does not know"), "\(migrate.logTail())")
                    let secondNotifierPort = try freePort()
                    let secondNotifier = process("notifier-2", service: "notifier", port: secondNotifierPort)
                    services.append(secondNotifier)
                    try await withProcessesStopped([secondNotifier]) {
                        try secondNotifier.start()
                        try await waitUntil("the second notifier ready", within: .seconds(90)) { await ready(secondNotifierPort) }
                        #expect(secondNotifier.log.contains("does not know"), "\(secondNotifier.logTail())")

                        // And the pipeline goes on on the newer schema.
                        for index in 0..<9 { try await send(after, fix: index) }
                        try await received.wait(timeout: .seconds(120)) { payloads in
                            (before + during + after).allSatisfy { $0.isComplete(payloads) }
                        }
                        try await Task.sleep(for: .seconds(2))

                        let requests = await received.requests
                        let arrivals = Dictionary(grouping: requests, by: \.eventId).mapValues(\.count)
                        #expect(arrivals.values.allSatisfy { $0 == 1 }, "\(arrivals.filter { $0.value > 1 })")
                        for trip in before + during + after {
                            let mine = requests.map(\.payload).filter { $0.data.deviceId == trip.deviceId }
                            #expect(mine.map(\.data.type) == [.checkin, .checkout], "\(trip.deviceId): \(mine.map(\.type))")
                        }
                        #expect(await received.rejected == 0)
                        #expect(await received.deviceOverlaps == 0)
                    }
                } catch {
                    for service in services { print("----- \(service.name) log -----\n\(service.logTail())") }
                    throw error
                }
            }
        }
    }
}

/// The versions in `schema_migrations`, in order.
private func schemaVersions(_ database: Database, logger: Logger) async throws -> [Int] {
    var versions: [Int] = []
    for try await version in try await database.client.query("SELECT version FROM schema_migrations ORDER BY version", logger: logger)
        .decode(Int.self)
    {
        versions.append(version)
    }
    return versions
}

/// Whether the service on `port` answers `/ready` with 200.
private func ready(_ port: Int) async -> Bool {
    let request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/ready")
    guard let response = try? await HTTPClient.shared.execute(request, timeout: .seconds(5)) else { return false }
    _ = try? await response.body.collect(upTo: 1 << 16)
    return response.status == .ok
}

/// Asks each service's `/ready` every 200 ms until stopped, noting every answer that is not 200.
private actor ReadinessWatch {
    let ports: [Int]
    private(set) var failures: [String] = []
    private(set) var checks = 0
    private var stopped = false

    init(ports: [Int]) {
        self.ports = ports
    }

    func run() async {
        while !stopped && !Task.isCancelled {
            for port in ports where await !ready(port) {
                failures.append("\(port) at \(Date())")
            }
            checks += 1
            try? await Task.sleep(for: .milliseconds(200))
        }
    }

    func stop() { stopped = true }
}
