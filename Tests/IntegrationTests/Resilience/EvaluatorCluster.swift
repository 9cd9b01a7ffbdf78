import AsyncHTTPClient
import Foundation
import Kafka
import KafkaTesting
import Logging
import Persistence
import PostgresNIO
import Shared

#if canImport(Glibc)
    import Glibc
#endif

/// Evaluator processes (real `checkin evaluator`s) against a Postgres of their own and
/// the shared broker, on topics and a group of their own: for tests that stop, freeze
/// and kill workers and the database.
final class EvaluatorCluster: @unchecked Sendable {
    let harness: PipelineHarness
    let postgres: PrivatePostgres
    let logDirectory: URL
    var partitions: Int32 = 4
    /// Extra environment for every evaluator started from now on.
    var environment: [String: String] = [:]
    private(set) var evaluators: [ServiceProcess] = []
    private(set) var ports: [Int] = []

    init(harness: PipelineHarness = PipelineHarness()) throws {
        self.harness = harness
        self.postgres = try PrivatePostgres()
        logDirectory = try harness.makeLogDirectory()
    }

    var logger: Logger { harness.logger }

    func databaseConfiguration() throws -> DatabaseConfiguration {
        try DatabaseConfiguration(url: postgres.url)
    }

    /// Starts Postgres, migrates it, creates the project with the trip's zones and the topics.
    func prepare(zones: ZonesDocument = TestTrip.zones) async throws {
        try await postgres.start()
        let (projectId, logger) = (harness.projectId, logger)
        try await Database.withTemporaryClient(configuration: try databaseConfiguration(), logger: logger) { database in
            try await Migrator(database: database, logger: logger).migrate()
            try await ProjectStore(database: database, logger: logger).createProject(id: projectId, name: "Test")
            try await ZoneStore(database: database, logger: logger).replaceZones(projectId: projectId, with: zones)
        }
        try await KafkaAdmin.createTopics(
            harness.topics.all.map { (name: $0, partitions: partitions) }, bootstrapServers: TestEnvironment.kafkaBrokers,
            timeout: .seconds(30), logger: logger)
    }

    /// Replaces the project's zones (a new zones version the evaluators pick up).
    func replaceZones(with zones: ZonesDocument) async throws {
        let (projectId, logger) = (harness.projectId, logger)
        try await Database.withTemporaryClient(configuration: try databaseConfiguration(), logger: logger) { database in
            try await ZoneStore(database: database, logger: logger).replaceZones(projectId: projectId, with: zones)
        }
    }

    /// Starts one more evaluator (as `user`, when given); returns its index.
    @discardableResult
    func startEvaluator(user: String? = nil) throws -> Int {
        let port = try freePort()
        let topics = harness.topics
        var environment: [String: String] = [
            "CHECKIN_KAFKA_BROKERS": TestEnvironment.kafkaBrokers, "CHECKIN_DATABASE_URL": postgres.url,
            "CHECKIN_TOPIC_FIXES": topics.fixes, "CHECKIN_TOPIC_FIXES_DLQ": topics.fixesDeadLetter,
            "CHECKIN_TOPIC_CHECKINS": topics.checkIns, "CHECKIN_TOPIC_CHECKOUTS": topics.checkOuts,
            "CHECKIN_TOPIC_EVENTS_DLQ": topics.eventsDeadLetter, "CHECKIN_EVALUATOR_GROUP": harness.evaluatorGroup,
            "CHECKIN_KAFKA_PARTITIONS": String(partitions), "CHECKIN_KAFKA_SESSION_TIMEOUT_MS": "6000",
            "CHECKIN_KAFKA_HEARTBEAT_INTERVAL_MS": "1000", "CHECKIN_KAFKA_MAX_POLL_INTERVAL_MS": "10000",
            "CHECKIN_ZONE_REFRESH_INTERVAL": "0.5", "CHECKIN_HTTP_PORT": String(port),
            "CHECKIN_SECRET_KEY": harness.secretKey.base64,
            // CHECKIN_TEST_LOG_LEVEL=debug (with CHECKIN_KAFKA_PROPERTY_debug=cgrp) to see the group's moves.
            "CHECKIN_LOG_LEVEL": ProcessInfo.processInfo.environment["CHECKIN_TEST_LOG_LEVEL"] ?? "info",
        ]
        environment.merge(self.environment) { $1 }
        let index = evaluators.count
        let process = ServiceProcess(
            name: "evaluator-\(index)", arguments: ["evaluator"], environment: environment, logDirectory: logDirectory,
            user: user)
        try process.start()
        evaluators.append(process)
        ports.append(port)
        return index
    }

    /// Starts the evaluator again after it stopped (same port and log).
    func restart(_ index: Int) throws {
        try evaluators[index].start()
    }

    /// `/ready` of an evaluator: its status code and the components it reports.
    func readiness(_ index: Int) async -> (status: Int, components: [String: Bool])? {
        let request = HTTPClientRequest(url: "http://127.0.0.1:\(ports[index])/ready")
        guard let response = try? await HTTPClient.shared.execute(request, timeout: .seconds(2)),
            let body = try? await response.body.collect(upTo: 1 << 16),
            let object = try? JSONSerialization.jsonObject(with: Data(buffer: body)) as? [String: Any]
        else { return nil }
        return (Int(response.status.code), object["components"] as? [String: Bool] ?? [:])
    }

    func waitUntilReady(_ index: Int, within timeout: Duration = .seconds(60)) async throws {
        try await waitUntil("evaluator \(index) ready", within: timeout) { await self.readiness(index)?.status == 200 }
    }

    /// Produces fixes straight to the fixes topic, keyed by device (as devices do).
    func produce(_ fixes: [[String: Any]]) async throws {
        let producer = try KafkaProducer(
            configuration: KafkaProducerConfiguration(bootstrapServers: TestEnvironment.kafkaBrokers, clientId: "test-raw"),
            logger: logger)
        try await withServicesRunning([producer]) {
            for fix in fixes {
                let value = Array(try JSONSerialization.data(withJSONObject: fix))
                let key = Array((fix["deviceId"] as? String ?? "").utf8)
                _ = try await producer.send(KafkaRecord(topic: harness.topics.fixes, key: key, value: value))
            }
        }
    }

    /// Produces raw records (anything at all) to the fixes topic.
    func produceRaw(_ values: [[UInt8]]) async throws {
        let producer = try KafkaProducer(
            configuration: KafkaProducerConfiguration(bootstrapServers: TestEnvironment.kafkaBrokers, clientId: "test-raw"),
            logger: logger)
        try await withServicesRunning([producer]) {
            for value in values {
                _ = try await producer.send(KafkaRecord(topic: harness.topics.fixes, key: nil, value: value))
            }
        }
    }

    /// Runs a query on the private database.
    func query(_ sql: String) async throws -> [PostgresRow] {
        let logger = logger
        return try await Database.withTemporaryClient(configuration: try databaseConfiguration(), logger: logger) { database in
            var rows: [PostgresRow] = []
            for try await row in try await database.client.query(PostgresQuery(unsafeSQL: sql), logger: logger) {
                rows.append(row)
            }
            return rows
        }
    }

    /// What every session of the database is doing, and the offsets: for a failure's message.
    func activity() async throws -> String {
        var lines: [String] = []
        for row in try await query(
            """
            SELECT coalesce(application_name, '') || ' ' || coalesce(state, '') || ' ' || coalesce(wait_event_type, '') || ':'
                   || coalesce(wait_event, '') || ' ' || coalesce(now() - xact_start, '0')::text || ' ' || left(query, 160)
            FROM pg_stat_activity WHERE datname IS NOT NULL
            """)
        {
            lines.append(try row.decode(String.self))
        }
        for row in try await query(
            "SELECT topic || '[' || partition || '] ' || next_offset FROM consumer_offsets ORDER BY topic, partition")
        {
            lines.append(try row.decode(String.self))
        }
        return lines.joined(separator: "\n")
    }

    var logs: String {
        evaluators.map { "----- \($0.name) -----\n\($0.log.suffix(6000))" }.joined(separator: "\n")
    }

    /// Stops every evaluator (a frozen one is woken first, to take its SIGTERM) and destroys the
    /// cluster's Postgres.
    func stopAll() async {
        for evaluator in evaluators { evaluator.signal(SIGCONT) }
        await stopProcesses(evaluators, grace: 5)
        await postgres.destroy()
    }
}
