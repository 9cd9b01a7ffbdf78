import Foundation
import Kafka
import KafkaTesting
import Persistence
import Shared
import Testing

/// Producers that write fixes to Kafka directly get the API's limits too, judged by
/// the evaluator against each record's own timestamp, and the API's rule on members the
/// fix format does not have.
@Suite(.serialized) struct DirectProducerLimitsTests {
    /// Produces `fixes` to the harness's fixes topic, keyed by `deviceId`, as a device that skips the API would.
    func produce(_ fixes: [[String: Any]], deviceId: String, harness: PipelineHarness) async throws {
        let producer = try KafkaProducer(
            configuration: KafkaProducerConfiguration(bootstrapServers: TestEnvironment.kafkaBrokers, clientId: "test-direct"),
            logger: harness.logger)
        try await withServicesRunning([producer]) {
            let results = await producer.send(
                try fixes.map { fix in
                    KafkaRecord(
                        topic: harness.topics.fixes, key: Array(deviceId.utf8),
                        value: Array(try JSONSerialization.data(withJSONObject: fix)))
                })
            for result in results { _ = try result.get() }
        }
    }

    /// A fix with a member the format does not have is dead-lettered naming it, as the API
    /// would refuse it; the device's next fix is decided.
    @Test func fixWithAnUnknownMemberIsDeadLetteredNamingIt() async throws {
        let harness = PipelineHarness()
        try await harness.run { _, _ in
            let trip = TestTrip(projectId: harness.projectId, deviceId: "device-" + UUID().uuidString.prefix(8).lowercased())
            var misspelt = trip.fix(3)
            misspelt["accuarcy"] = misspelt.removeValue(forKey: "accuracy")
            try await produce([misspelt, trip.fix(4)], deviceId: trip.deviceId, harness: harness)

            let deadLetters = try await consume(topic: harness.topics.fixesDeadLetter, count: 1, logger: harness.logger)
            let reason = deadLetters[0].headers.first { $0.key == "checkin-error" }.map { String(decoding: $0.value ?? [], as: UTF8.self) }
            #expect(reason == "accuarcy: is not a member of a fix")
            let checkIns = try await consume(topic: harness.topics.checkIns, count: 1, logger: harness.logger)
            let event = try WireJSON.decoder().decode(CheckEvent.self, from: Data(checkIns[0].value))
            // The misspelt fix, inside the zone too, would have checked the device in first.
            #expect(event.deviceId == trip.deviceId)
            #expect(event.location.timestamp == RFC3339.parse(try #require(trip.fix(4)["timestamp"] as? String)))
        }
    }

    /// Under `CHECKIN_FIXES_IGNORE_UNKNOWN_MEMBERS` the evaluator skips such a member, as the ingest does.
    @Test func fixWithAnUnknownMemberIsEvaluatedWhenTheSettingSaysSo() async throws {
        var lenient = PipelineHarness()
        lenient.limits = InputLimits(ignoresUnknownFixMembers: true)
        let harness = lenient
        try await harness.run { _, _ in
            let trip = TestTrip(projectId: harness.projectId, deviceId: "device-" + UUID().uuidString.prefix(8).lowercased())
            var fix = trip.fix(4)
            fix["battery"] = 0.5
            try await produce([fix], deviceId: trip.deviceId, harness: harness)

            let checkIns = try await consume(topic: harness.topics.checkIns, count: 1, logger: harness.logger)
            let event = try WireJSON.decoder().decode(CheckEvent.self, from: Data(checkIns[0].value))
            #expect(event.deviceId == trip.deviceId)
        }
    }

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
