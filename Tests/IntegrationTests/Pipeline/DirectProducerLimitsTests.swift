import Foundation
import Kafka
import KafkaTesting
import Persistence
import Shared
import Testing

/// Producers that write fixes to Kafka directly get the API's limits too, judged by
/// the evaluator against each record's own timestamp.
@Suite(.serialized) struct DirectProducerLimitsTests {
    /// A fix dated an hour after its record is dead-lettered with the reason; a fix of
    /// another project's device right behind it, in the same partition, is decided.
    @Test func fixAheadOfItsRecordIsDeadLetteredAndTheNextDeviceIsDecided() async throws {
        let harness = PipelineHarness()
        let otherProject = harness.projectId + "-other"
        let logger = harness.logger
        // Both projects exist before the evaluator starts, so its first zones load has them.
        try await harness.prepare()
        try await Database.withTemporaryClient(configuration: try harness.databaseConfiguration(), logger: logger) { database in
            try await ProjectStore(database: database, logger: logger).createProject(id: otherProject, name: "Other")
            try await ZoneStore(database: database, logger: logger).replaceZones(projectId: otherProject, with: TestTrip.zones)
        }
        try await harness.run { _, _ in
            // The same device id in both projects: one key, so one partition, one after the other.
            let deviceId = "device-" + UUID().uuidString.prefix(8).lowercased()
            var early = TestTrip(projectId: harness.projectId, deviceId: deviceId).fix(4)
            early["timestamp"] = RFC3339.format(Date().addingTimeInterval(3600))
            let onTime = TestTrip(projectId: otherProject, deviceId: deviceId).fix(4)

            let producer = try KafkaProducer(
                configuration: KafkaProducerConfiguration(bootstrapServers: TestEnvironment.kafkaBrokers, clientId: "test-direct"),
                logger: logger)
            try await withServicesRunning([producer]) {
                let results = await producer.send(
                    try [early, onTime].map { fix in
                        KafkaRecord(
                            topic: harness.topics.fixes, key: Array(deviceId.utf8),
                            value: Array(try JSONSerialization.data(withJSONObject: fix)))
                    })
                for result in results { _ = try result.get() }
            }

            let deadLetters = try await consume(topic: harness.topics.fixesDeadLetter, count: 1, logger: logger)
            let headers = Dictionary(
                uniqueKeysWithValues: deadLetters[0].headers.map { ($0.key, String(decoding: $0.value ?? [], as: UTF8.self)) })
            #expect(headers["checkin-error"]?.hasPrefix("timestamp: must be at most 300 s after the fix was received") == true)
            let refused = try JSONSerialization.jsonObject(with: Data(deadLetters[0].value)) as? [String: Any]
            #expect(refused?["projectId"] as? String == harness.projectId)

            let checkIns = try await consume(topic: harness.topics.checkIns, count: 1, logger: logger)
            let event = try WireJSON.decoder().decode(CheckEvent.self, from: Data(checkIns[0].value))
            #expect(event.projectId == otherProject)
            #expect(event.deviceId == deviceId)
            #expect(event.zone.id == "zone-cafe")
        }
    }
}
