import Foundation
import Kafka
import KafkaTesting
import Logging
import Persistence
import Shared
import Testing

/// One tenant's record that cannot be processed goes to a dead-letter topic; its
/// partition moves on, and every other tenant's devices are decided.
@Suite(.serialized) struct PoisonRecordTests {
    /// A NUL in a device id passes JSON but not Postgres: before, the batch was retried
    /// for ever and nobody on the partition was evaluated again.
    @Test func fixTheDatabaseRefusesIsDeadLetteredAndThePartitionMovesOn() async throws {
        var configured = PipelineHarness()
        configured.otherTenants = ["other"]
        let harness = configured
        try await harness.run { _, _ in
            let otherProject = harness.tenantId("other")
            let poison = TestTrip(projectId: harness.projectId, deviceId: "nul\u{0}device")
            let good = TestTrip(projectId: otherProject)
            try await produce([poison.fix(3)] + (0..<9).map(good.fix), to: harness.topics.fixes, partition: 0, harness)

            let deadLetters = try await consume(topic: harness.topics.fixesDeadLetter, count: 1, logger: harness.logger)
            let headers = deadLetters[0].headerTexts
            #expect(headers["checkin-origin-topic"] == harness.topics.fixes)
            #expect(headers["checkin-origin-partition"] == "0")
            #expect(headers["checkin-origin-offset"] == "0")
            #expect(headers["checkin-error"]?.isEmpty == false)
            #expect(try JSONSerialization.jsonObject(with: Data(deadLetters[0].value)) as? [String: Any] != nil)

            let events = try await consumeEvents(of: good.deviceId, count: 2, harness)
            #expect(events.map(\.type) == [.checkin, .checkout])
            try await expectCommittedOffset(10, partition: 0, harness)

            // With the worker running and caught up: how long a partition takes to move past one.
            let later = TestTrip(projectId: otherProject)
            let produced = ContinuousClock.now
            try await produce([poison.fix(4), later.fix(0)], to: harness.topics.fixes, partition: 0, harness)
            try await expectCommittedOffset(12, partition: 0, harness)
            print("partition moved past a fix the database refuses in \(ContinuousClock.now - produced)")
            #expect(try await consume(topic: harness.topics.fixesDeadLetter, count: 2, logger: harness.logger).count == 2)
        }
    }

    /// An event larger than the broker takes (here a zone's custom data within the input
    /// limits against a producer whose message limit is lowered to 20 kB, as a broker's
    /// may be): the fix that would check in is dead-lettered, the partition and other
    /// tenants go on.
    @Test func fixWhoseEventTheBrokerRefusesIsDeadLettered() async throws {
        var configured = PipelineHarness()
        configured.producerProperties = ["message.max.bytes": "20000"]
        configured.otherTenants = ["other"]
        // The project's zone carries 40 kB of custom data from the start, so that the first
        // fix is decided against it (no waiting for a refresh that a busy machine may delay).
        configured.zones.zones[0].customData = Dictionary(uniqueKeysWithValues: (1...40).map { ("key\($0)", String(repeating: "x", count: 1000)) })
        let harness = configured
        try await harness.run { _, _ in
            let otherProject = harness.tenantId("other")
            let poison = TestTrip(projectId: harness.projectId)
            let good = TestTrip(projectId: otherProject)
            try await produce([poison.fix(3)] + (0..<9).map(good.fix), to: harness.topics.fixes, partition: 0, harness)

            let deadLetters = try await consume(topic: harness.topics.fixesDeadLetter, count: 1, logger: harness.logger)
            let headers = deadLetters[0].headerTexts
            #expect(headers["checkin-origin-offset"] == "0")
            #expect(headers["checkin-error"]?.contains("message.max.bytes") == true)

            let events = try await consumeEvents(of: good.deviceId, count: 2, harness)
            #expect(events.map(\.type) == [.checkin, .checkout])
            try await expectCommittedOffset(10, partition: 0, harness)

            // With the worker running and caught up: how long a partition takes to move past one.
            let later = TestTrip(projectId: otherProject)
            let produced = ContinuousClock.now
            try await produce([poison.fix(4), later.fix(0)], to: harness.topics.fixes, partition: 0, harness)
            try await expectCommittedOffset(12, partition: 0, harness)
            print("partition moved past a fix whose event the broker refuses in \(ContinuousClock.now - produced)")
            #expect(try await consume(topic: harness.topics.fixesDeadLetter, count: 2, logger: harness.logger).count == 2)
        }
    }

    /// The notifier's intake: an event the database refuses goes to the events'
    /// dead-letter topic, and the device's next events are still delivered.
    @Test func eventTheDatabaseRefusesIsDeadLetteredByTheNotifier() async throws {
        let harness = PipelineHarness()
        try await harness.run { ingestPort, received in
            let trip = TestTrip(projectId: harness.projectId)
            let url = "http://127.0.0.1:\(ingestPort)/v1/fixes"
            #expect(try await post(try trip.batch(0..<5), to: url, key: harness.deviceKey).status == 202)
            let checkIn = try await consume(topic: harness.topics.checkIns, count: 1, logger: harness.logger)[0]
            var event = try #require(try JSONSerialization.jsonObject(with: Data(checkIn.value)) as? [String: Any])
            event["deviceId"] = "nul\u{0}device"
            event["eventId"] = "poison-" + UUID().uuidString
            let poison = try JSONSerialization.data(withJSONObject: event)
            try await produceRaw([Array(poison)], to: harness.topics.checkIns, partition: checkIn.partition, harness)

            #expect(try await post(try trip.batch(5..<9), to: url, key: harness.deviceKey).status == 202)
            try await received.wait(timeout: .seconds(90)) { trip.isComplete($0) }
            let deadLetters = try await consume(topic: harness.topics.eventsDeadLetter, count: 1, logger: harness.logger)
            #expect(deadLetters[0].value == Array(poison))
            #expect(deadLetters[0].headerTexts["checkin-origin-topic"] == harness.topics.checkIns)
        }
    }
}

extension KafkaConsumerMessage {
    var headerTexts: [String: String] {
        Dictionary(headers.map { ($0.key, String(decoding: $0.value ?? [], as: UTF8.self)) }) { $1 }
    }
}

/// Produces fixes (as JSON objects) straight to the fixes topic, in order, on one partition.
func produce(_ fixes: [[String: Any]], to topic: String, partition: Int32, _ harness: PipelineHarness) async throws {
    try await produceRaw(
        try fixes.map { Array(try JSONSerialization.data(withJSONObject: $0)) }, to: topic, partition: partition, harness)
}

func produceRaw(_ values: [[UInt8]], to topic: String, partition: Int32, _ harness: PipelineHarness) async throws {
    let producer = try KafkaProducer(
        configuration: KafkaProducerConfiguration(bootstrapServers: TestEnvironment.kafkaBrokers, clientId: "test-raw"),
        logger: harness.logger)
    try await withServicesRunning([producer]) {
        for value in values {
            _ = try await producer.send(KafkaRecord(topic: topic, key: nil, value: value, partition: partition))
        }
    }
}

/// The events of one device on both event topics, once `count` of them are there.
func consumeEvents(of deviceId: String, count: Int, _ harness: PipelineHarness) async throws -> [CheckEvent] {
    let deadline = ContinuousClock.now + .seconds(60)
    while true {
        let checkIns = try await consumeAll(topic: harness.topics.checkIns, logger: harness.logger)
        let checkOuts = try await consumeAll(topic: harness.topics.checkOuts, logger: harness.logger)
        let events = try (checkIns + checkOuts).map { try WireJSON.decoder().decode(CheckEvent.self, from: Data($0.value)) }
            .filter { $0.deviceId == deviceId }
        // At-least-once: an attempt that failed may have published some events already; their ids repeat.
        var seen: Set<String> = []
        let distinct = events.filter { seen.insert($0.eventId).inserted }
        if distinct.count >= count {
            return distinct.sorted { ($0.checkOutTime ?? $0.location.timestamp) < ($1.checkOutTime ?? $1.location.timestamp) }
        }
        if ContinuousClock.now > deadline { throw TestFailure("\(count) events of \(deviceId) did not arrive in 60 s") }
        try await Task.sleep(for: .seconds(1))
    }
}

/// The evaluator's offset for a partition of the fixes topic, as committed in Postgres.
func expectCommittedOffset(_ expected: Int64, partition: Int32, _ harness: PipelineHarness) async throws {
    let logger = harness.logger
    let deadline = ContinuousClock.now + .seconds(30)
    while true {
        let offsets = try await Database.withTemporaryClient(configuration: try harness.databaseConfiguration(), logger: logger) {
            database in
            try await OffsetStore(database: database, logger: logger).nextOffsets(
                group: harness.evaluatorGroup, topic: harness.topics.fixes, partitions: [partition])
        }
        if offsets[partition] == expected { return }
        if ContinuousClock.now > deadline {
            Issue.record("the committed offset of partition \(partition) is \(String(describing: offsets[partition])), not \(expected)")
            return
        }
        try await Task.sleep(for: .milliseconds(250))
    }
}
