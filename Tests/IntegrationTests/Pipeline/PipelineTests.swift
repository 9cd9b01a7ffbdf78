import Foundation
import Kafka
import KafkaTesting
import Logging
import Persistence
import ServiceSupport
import Shared
import Testing

/// Fixes over HTTP become signed webhooks at a partner, through the real broker and Postgres.
@Suite(.serialized) struct PipelineTests {
    @Test func tripBecomesSignedCheckInAndCheckOutWebhooks() async throws {
        let harness = PipelineHarness()
        try await harness.run { ingestPort, received in
            let trip = TestTrip(projectId: harness.projectId)
            let url = "http://127.0.0.1:\(ingestPort)/v1/fixes"

            // A record produced directly to Kafka that is not a fix: dead-lettered, nothing stops.
            let producer = try KafkaProducer(
                configuration: KafkaProducerConfiguration(bootstrapServers: TestEnvironment.kafkaBrokers, clientId: "test-raw"),
                logger: harness.logger)
            try await withServicesRunning([producer]) {
                _ = try await producer.send(
                    KafkaRecord(topic: harness.topics.fixes, key: Array(trip.deviceId.utf8), value: Array(#"{"deviceId": 7}"#.utf8)))
                // And one on the check-ins topic that is not an event: the notifier sets it aside too.
                _ = try await producer.send(
                    KafkaRecord(topic: harness.topics.checkIns, key: Array(trip.deviceId.utf8), value: Array("not json".utf8)))
            }

            let answer = try await post(try trip.batch(0..<9), to: url, key: harness.deviceKey)
            #expect(answer.status == 202)
            #expect(answer.body == #"{"accepted":9}"#)

            try await received.wait(timeout: .seconds(90)) { trip.isComplete($0) }
            let payloads = await received.payloads.filter { $0.data.deviceId == trip.deviceId }
            let checkIn = try #require(payloads.first { $0.type == "zone.checkin" })
            let checkOut = try #require(payloads.first { $0.type == "zone.checkout" })
            #expect(checkIn.data.zone.customData == ["storeId": "042", "tier": "gold"])
            #expect(checkIn.data.fence?.id == "fence-cafe")
            #expect(checkIn.data.willCheckOut)
            #expect(abs(checkIn.data.location.timestamp.timeIntervalSince(trip.start.addingTimeInterval(90))) < 0.01)
            #expect(checkOut.data.reason == .exit)
            #expect(checkOut.data.dwellSeconds == 90)
            #expect(payloads.map(\.data.type) == [.checkin, .checkout])
            // The webhook-id header is the event id, so partners can drop redeliveries.
            let all = await received.payloads
            let ids = await received.webhookIds
            #expect(zip(all, ids).filter { $0.0.data.deviceId == trip.deviceId }.map(\.1) == payloads.map(\.data.eventId))
            #expect(await received.rejected == 0)

            let deadLetters = try await consume(topic: harness.topics.fixesDeadLetter, count: 1, logger: harness.logger)
            let headers = Dictionary(
                uniqueKeysWithValues: deadLetters[0].headers.map { ($0.key, String(decoding: $0.value ?? [], as: UTF8.self)) })
            #expect(headers["checkin-origin-topic"] == harness.topics.fixes)
            #expect(headers["checkin-error"]?.contains("deviceId") == true)

            let eventDeadLetters = try await consume(topic: harness.topics.eventsDeadLetter, count: 1, logger: harness.logger)
            #expect(eventDeadLetters[0].value == Array("not json".utf8))
            let eventHeaders = Dictionary(
                uniqueKeysWithValues: eventDeadLetters[0].headers.map { ($0.key, String(decoding: $0.value ?? [], as: UTF8.self)) })
            #expect(eventHeaders["checkin-origin-topic"] == harness.topics.checkIns)
            #expect(eventHeaders["checkin-error"]?.hasPrefix("not an event") == true)
        }
    }

    @Test func invalidBatchesAreRefusedWithProblemDetailsNamingEachField() async throws {
        let harness = PipelineHarness()
        try await harness.run { ingestPort, _ in
            let url = "http://127.0.0.1:\(ingestPort)/v1/fixes"
            let bad =
                #"{"fixes":[{"deviceId":"d","timestamp":"2026-11-22T10:00:00Z","lat":95,"lon":0},{"deviceId":"e","lat":0,"lon":0,"timestamp":"soon"}]}"#
            let answer = try await post(Data(bad.utf8), to: url, key: harness.deviceKey)
            #expect(answer.status == 400)
            #expect(answer.contentType == "application/problem+json")
            #expect(answer.body.contains(#""name":"fixes[0].lat""#))
            #expect(answer.body.contains(#""name":"fixes[1].timestamp""#))

            let unauthorized = try await post(try TestTrip(projectId: harness.projectId).batch(0..<1), to: url, key: "wrong")
            #expect(unauthorized.status == 401)
            #expect(unauthorized.contentType == "application/problem+json")

            let otherProject = try await post(try TestTrip(projectId: "someone-else").batch(0..<1), to: url, key: harness.deviceKey)
            #expect(otherProject.status == 400)
            #expect(otherProject.body.contains("fixes[0].projectId"))
        }
    }
}

extension PipelineTests {
    /// A state row that no longer decodes (say, written by an older format) must not
    /// stall the partition: the device starts afresh and its trip is still decided.
    @Test func unreadableStoredStateDoesNotStallThePartition() async throws {
        let harness = PipelineHarness()
        try await harness.run { ingestPort, received in
            let trip = TestTrip(projectId: harness.projectId)
            let logger = harness.logger
            try await Database.withTemporaryClient(configuration: try harness.databaseConfiguration(), logger: logger) { database in
                try await database.withTransaction { connection in
                    try await DeviceStateStore(logger: logger).save(
                        [
                            StoredDeviceState(
                                key: DeviceKey(projectId: trip.projectId, deviceId: trip.deviceId),
                                state: Array(#"{"t": "not a time"}"#.utf8), lastFixAt: nil, staleAt: nil)
                        ], on: connection)
                }
            }
            #expect(
                try await post(try trip.batch(0..<9), to: "http://127.0.0.1:\(ingestPort)/v1/fixes", key: harness.deviceKey).status == 202)
            try await received.wait(timeout: .seconds(90)) { trip.isComplete($0) }
            let metrics = MetricsBootstrap.prometheus().emitToString()
            let resets = metrics.split(separator: "\n").first { $0.hasPrefix("checkin_evaluator_state_resets_total ") }
            #expect(resets.flatMap { Double($0.split(separator: " ").last ?? "") }.map { $0 >= 1 } == true)
        }
    }
}

/// A consumer of one topic from its beginning, in a group of its own, with the local broker's short timeouts.
func readerConsumer(topic: String, logger: Logger) throws -> KafkaConsumer {
    var configuration = KafkaConsumerConfiguration(
        bootstrapServers: TestEnvironment.kafkaBrokers, groupId: "reader-" + UUID().uuidString, clientId: "test-reader",
        topics: [topic])
    configuration.sessionTimeout = .seconds(6)
    configuration.heartbeatInterval = .seconds(1)
    configuration.maxPollInterval = .seconds(10)
    return try KafkaConsumer(configuration: configuration, rebalanceListener: nil, logger: logger)
}

/// Reads `count` records of a topic from its beginning, with a group of its own.
func consume(topic: String, count: Int, logger: Logger) async throws -> [KafkaConsumerMessage] {
    let consumer = try readerConsumer(topic: topic, logger: logger)
    return try await withThrowingTaskGroup(of: [KafkaConsumerMessage]?.self) { tasks in
        tasks.addTask {
            try await consumer.run()
            return nil
        }
        tasks.addTask {
            var messages: [KafkaConsumerMessage] = []
            for try await batch in consumer.batches {
                messages += batch
                if messages.count >= count { return messages }
            }
            return messages
        }
        tasks.addTask {
            try await Task.sleep(for: .seconds(60))
            throw TestFailure("\(topic) did not receive \(count) records in 60 s")
        }
        defer { tasks.cancelAll() }
        while let result = try await tasks.next() {
            if let messages = result { return messages }
        }
        return []
    }
}
