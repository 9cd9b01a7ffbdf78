import AsyncHTTPClient
import Foundation
import Kafka
import KafkaTesting
import Logging
import Persistence
import Shared
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `checkin status` and the operators' metrics against a running `checkin dev`, on a
/// broker of this test's own, so that the broker can be stopped under the pipeline.
@Suite(.serialized) struct StatusCommandTests {
    static let operatorKey = "operator-key-of-the-status-command-tests-0123456789"
    let suffix = String(UUID().uuidString.prefix(8)).lowercased()
    var projectId: String { "status-\(suffix)" }
    var topics: Topics {
        Topics(
            fixes: "status-\(suffix).fixes", fixesDeadLetter: "status-\(suffix).fixes.dlq",
            checkIns: "status-\(suffix).checkins", checkOuts: "status-\(suffix).checkouts",
            eventsDeadLetter: "status-\(suffix).events.dlq")
    }
    let logger = Logger.forTests("test.status")

    @Test func reportsAHealthyPipelineAndABrokerThatStopped() async throws {
        let logDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("checkin-status-\(suffix)")
        try FileManager.default.createDirectory(at: logDirectory, withIntermediateDirectories: true)
        let broker = try PrivateBroker(logDirectory: logDirectory)
        try await withCleanUp({ await broker.stop() }) {
            try await KafkaAdmin.waitUntilReachable(bootstrapServers: broker.address, timeout: .seconds(15), logger: logger)

            let endpointId = try await addProjectWithEndpoint()
            let port = try freePort()
            let environment: [String: String] = [
                "CHECKIN_KAFKA_BROKERS": broker.address, "CHECKIN_DATABASE_URL": TestEnvironment.databaseURL,
                "CHECKIN_TOPIC_FIXES": topics.fixes, "CHECKIN_TOPIC_FIXES_DLQ": topics.fixesDeadLetter,
                "CHECKIN_TOPIC_CHECKINS": topics.checkIns, "CHECKIN_TOPIC_CHECKOUTS": topics.checkOuts,
                "CHECKIN_TOPIC_EVENTS_DLQ": topics.eventsDeadLetter, "CHECKIN_EVALUATOR_GROUP": "evaluator-\(suffix)",
                "CHECKIN_NOTIFIER_GROUP": "notifier-\(suffix)", "CHECKIN_KAFKA_PARTITIONS": "2",
                "CHECKIN_INGEST_REQUIRE_API_KEY": "false", "CHECKIN_HTTP_PORT": String(port), "CHECKIN_LOG_LEVEL": "warning",
                "CHECKIN_SECRET_KEY": PipelineHarness.sharedSecretKey.base64, "CHECKIN_OPERATOR_KEY": Self.operatorKey,
            ]
            let dev = ServiceProcess(name: "dev", arguments: ["dev"], environment: environment, logDirectory: logDirectory)
            try dev.start()
            try await withProcessesStopped([dev]) {
                let ready = "http://127.0.0.1:\(port)/ready"
                let status = StatusRunner(environment: environment, readyURL: ready)

                // Ten fixes through the API and one record that is not a fix, straight to the topic.
                try await waitUntil("checkin dev is ready", log: dev) { try await httpStatus(ready) == 200 }
                #expect(try await post(fixes(count: 10), to: "http://127.0.0.1:\(port)/v1/fixes", key: nil).status == 202)
                try await produce(#"{"deviceId": "not a fix"}"#, to: topics.fixes, broker: broker.address)

                var healthy = try await status.run(["--json"])
                try await waitUntil("the evaluator has processed the 11 records", log: dev) {
                    healthy = try await status.run(["--json"])
                    let report = try healthy.json()
                    let committed = report.lag.filter { $0.group == "evaluator-\(suffix)" }.compactMap(\.committed).reduce(0, +)
                    return committed == 11 && report.deadLetters.first { $0.topic == topics.fixesDeadLetter }?.lastHour == 1
                }
                #expect(healthy.exitCode == 0, "\(healthy.standardError)")
                let report = try healthy.json()
                #expect(report.services.map(\.url) == [ready])
                #expect(report.services.first?.ready == true)
                #expect(Set(report.lag.filter { $0.group == "evaluator-\(suffix)" }.map(\.partition)) == [0, 1])
                #expect(Set(report.lag.filter { $0.group == "notifier-\(suffix)" }.map(\.topic)) == [topics.checkIns, topics.checkOuts])
                #expect(report.deadLetters.first { $0.topic == topics.fixesDeadLetter }?.total == 1)
                #expect(report.deadLetters.first { $0.topic == topics.fixesDeadLetter }?.notSentBack == 1)
                #expect(report.deadLetters.first { $0.topic == topics.eventsDeadLetter }?.total == 0)
                #expect(report.deadLetters.first { $0.topic == topics.eventsDeadLetter }?.notSentBack == 0)
                let endpoint = try #require(report.deliveries.first { $0.endpointId == endpointId })
                #expect(endpoint.projectId == projectId && endpoint.enabled)
                #expect(report.problems.isEmpty)
                #expect(
                    report.warnings.contains("1 dead letters on \(topics.fixesDeadLetter) in the last hour (checkin dead-letters list)"))

                // Asked without --ready, it finds checkin dev on its one port and asks no other.
                let local = try await status.runLocal(port: port, ["--json"])
                #expect(local.exitCode == 0, "\(local.standardError)")
                let localReport = try local.json()
                #expect(localReport.services.map(\.url) == [ready])
                #expect(localReport.services.first?.serves == ["ingest", "evaluator", "notifier"])
                // Without --local-port, the port is the services' own setting, CHECKIN_HTTP_PORT.
                let configured = try await CommandOutcome.run(["status", "--json"], environment: environment)
                #expect(configured.exitCode == 0, "\(configured.standardError)")
                #expect(try configured.json().services.map(\.url) == [ready])

                // Through the API (no database or broker named): the same report, read by the ingest,
                // which is the service that answers.
                let remote = RemoteStatusRunner(url: "http://127.0.0.1:\(port)", operatorKey: Self.operatorKey)
                let throughAPI = try await remote.run(["--json"])
                #expect(throughAPI.exitCode == 0, "\(throughAPI.standardError)")
                let remoteReport = try throughAPI.json()
                #expect(remoteReport.services.map(\.url) == ["this ingest"])
                #expect(remoteReport.services.first?.serves == ["ingest", "evaluator", "notifier"])
                #expect(remoteReport.lag.map(\.group) == report.lag.map(\.group))
                #expect(remoteReport.lag.map(\.partition) == report.lag.map(\.partition))
                #expect(remoteReport.deadLetters.map(\.total) == report.deadLetters.map(\.total))
                // The deliveries and warnings of every project: other tests' come and go between two reads.
                #expect(remoteReport.deliveries.contains { $0.endpointId == endpointId && $0.projectId == projectId })
                #expect(remoteReport.problems.isEmpty)
                #expect(
                    remoteReport.warnings.contains(
                        "1 dead letters on \(topics.fixesDeadLetter) in the last hour (checkin dead-letters list)"))
                let wrongKey = try await RemoteStatusRunner(url: "http://127.0.0.1:\(port)", operatorKey: "not-" + Self.operatorKey).run([])
                #expect(wrongKey.exitCode != 0)
                #expect(wrongKey.standardError.contains("HTTP 401") && wrongKey.standardError.contains("CHECKIN_OPERATOR_KEY"))
                let refusedLocal = try await remote.run(["--ready", ready])
                #expect(refusedLocal.exitCode != 0 && refusedLocal.standardError.contains("--ready and --local-port name local services"))

                // The dead letter is a warning: it fails the command only when asked to.
                let strict = try await status.run(["--strict"])
                #expect(strict.exitCode == 1)
                #expect(strict.standardError.contains("dead letters on \(topics.fixesDeadLetter)"))
                #expect(strict.standardOutput.contains("HEALTHY"))

                let metrics = try await httpBody("http://127.0.0.1:\(port)/metrics")
                #expect(metrics.contains(#"checkin_evaluator_consumer_lag_records{topic="\#(topics.fixes)",partition="1"}"#))
                #expect(metrics.contains(#"checkin_notifier_consumer_lag_records{topic="\#(topics.checkIns)",partition="0"}"#))
                #expect(metrics.contains(#"checkin_notifier_endpoint_enabled{project="\#(projectId)",endpoint="\#(endpointId)"} 1"#))
                #expect(metrics.contains(#"checkin_evaluator_dead_letters_total{reason="invalid-fix"} "#))
                #expect(metrics.contains(#"checkin_ready{component="broker"} 1"#))

                // Sent back, the record is set aside again (it is still not a fix): two dead letters,
                // one of them not sent back.
                let redriven = try await CommandOutcome.run(["dead-letters", "redrive", "--topic", "fixes"], environment: environment)
                #expect(redriven.exitCode == 0, "\(redriven.standardError)")
                var afterRedrive = try await status.run(["--json"])
                try await waitUntil("the record sent back is set aside again", log: dev) {
                    afterRedrive = try await status.run(["--json"])
                    return try afterRedrive.json().deadLetters.first { $0.topic == topics.fixesDeadLetter }?.total == 2
                }
                #expect(try afterRedrive.json().deadLetters.first { $0.topic == topics.fixesDeadLetter }?.notSentBack == 1)
                let table = try await status.run([])
                #expect(table.standardOutput.contains("NOT SENT BACK"), "\(table.standardOutput)")

                await broker.stop()
                let stopped = try await status.run(["--timeout", "2"])
                #expect(stopped.exitCode == 1)
                #expect(stopped.standardError.contains("the Kafka broker at \(broker.address) could not be reached"))
                #expect(stopped.standardOutput.contains("UNHEALTHY"))
                let stoppedThroughAPI = try await remote.run(["--timeout", "2"])
                #expect(stoppedThroughAPI.exitCode == 1)
                #expect(
                    stoppedThroughAPI.standardError.contains("the Kafka broker at \(broker.address) could not be reached"),
                    "\(stoppedThroughAPI.standardError)")
                // The service's own probe notices within its 5 s interval, and says so in /ready and the gauge.
                try await waitUntil("the service reports the broker not ready", log: dev) {
                    try await httpBody("http://127.0.0.1:\(port)/metrics").contains(#"checkin_ready{component="broker"} 0"#)
                }
                #expect(try await httpStatus(ready) == 503)
            }
        }
    }

    /// After a group moved on to its next incarnation, the lag is the one of the group the
    /// workers are in now, not of the configured group they left.
    @Test func readsTheGroupEachWorkerIsInNow() async throws {
        let harness = PipelineHarness()
        try await harness.prepare()
        // Both groups were moved on once, as after a rebalance that never completed.
        let (groups, logger) = ([harness.evaluatorGroup, harness.notifierGroup], logger)
        let incarnations = try await Database.withTemporaryClient(
            configuration: try harness.databaseConfiguration(), logger: logger
        ) { database in
            let store = ConsumerGroupStore(database: database, logger: logger)
            var incarnations: [Int] = []
            for group in groups { incarnations.append(try await store.advance(group, from: 0)) }
            return incarnations
        }
        #expect(incarnations == [1, 1])
        let port = try freePort()
        let environment = harness.processEnvironment.merging(["CHECKIN_HTTP_PORT": String(port)]) { $1 }
        let dev = ServiceProcess(
            name: "dev", arguments: ["dev"], environment: environment, logDirectory: try harness.makeLogDirectory())
        try dev.start()
        try await withProcessesStopped([dev]) {
            let ready = "http://127.0.0.1:\(port)/ready"
            let status = StatusRunner(environment: environment, readyURL: ready)
            try await waitUntil("checkin dev is ready", log: dev) { try await httpStatus(ready) == 200 }
            let trip = TestTrip(projectId: harness.projectId)
            #expect(
                try await post(try trip.batch(0..<9), to: "http://127.0.0.1:\(port)/v1/fixes", key: harness.deviceKey).status == 202)

            // The trip's check-in and check-out, committed by the notifier in incarnation 1.
            let notifierGroup = harness.notifierGroup + "~1"
            var outcome = try await status.run(["--json", "--max-lag", "0"])
            try await waitUntil("status reads the trip's two events committed in \(notifierGroup)", log: dev) {
                outcome = try await status.run(["--json", "--max-lag", "0"])
                return try outcome.json().lag.filter { $0.group == notifierGroup }.compactMap(\.committed).reduce(0, +) == 2
            }
            #expect(outcome.exitCode == 0, "\(outcome.standardError)")
            let report = try outcome.json()
            #expect(!report.lag.contains { $0.group == harness.notifierGroup })
            #expect(report.lag.filter { $0.group == notifierGroup }.allSatisfy { $0.lag == 0 })
            // The evaluators' offsets stay in Postgres under the configured group whatever the incarnation.
            #expect(report.lag.filter { $0.group == harness.evaluatorGroup }.compactMap(\.committed).reduce(0, +) == 9)
            #expect(report.groups.map(\.worker) == ["evaluator", "notifier"])
            #expect(report.groups.map(\.incarnation) == [1, 1])
            #expect(report.groups.map(\.groupId) == [harness.evaluatorGroup + "~1", notifierGroup])
            #expect(try await status.run([]).standardOutput.contains("  \(notifierGroup)  \(harness.topics.checkIns)  "))
        }
    }

    /// The project and an endpoint whose deliveries the report lists.
    func addProjectWithEndpoint() async throws -> String {
        let (projectId, logger) = (projectId, logger)
        return try await Database.withTemporaryClient(
            configuration: try DatabaseConfiguration(url: TestEnvironment.databaseURL), logger: logger
        ) { database in
            try await Migrator(database: database, logger: logger).migrate()
            try await ProjectStore(database: database, logger: logger).createProject(id: projectId, name: "Status")
            return try await WebhookStore(database: database, logger: logger, sealer: PipelineHarness().sealer)
                .addEndpoint(projectId: projectId, url: "http://127.0.0.1:1/hooks", secrets: [WebhookSecret.generate()]).id
        }
    }

    func fixes(count: Int) throws -> Data {
        let start = Date().addingTimeInterval(-600)
        let items: [[String: Any]] = (0..<count).map { index in
            [
                "projectId": projectId, "deviceId": "device-\(index % 3)", "fixId": "fix-\(index)",
                "timestamp": RFC3339.format(start.addingTimeInterval(Double(index))), "lat": -37.8, "lon": 144.9,
                "accuracy": 10,
            ]
        }
        return try JSONSerialization.data(withJSONObject: ["fixes": items])
    }

    func produce(_ value: String, to topic: String, broker: String) async throws {
        let producer = try KafkaProducer(
            configuration: KafkaProducerConfiguration(bootstrapServers: broker, clientId: "test-status"), logger: logger)
        try await withServicesRunning([producer]) {
            try await producer.sendAll([KafkaRecord(topic: topic, key: Array("k".utf8), value: Array(value.utf8))])
        }
    }
}
