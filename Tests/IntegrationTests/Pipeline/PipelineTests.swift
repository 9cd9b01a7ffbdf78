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
            // Partners can tell which release sent them.
            let userAgents = await received.userAgents
            #expect(userAgents == [Release.webhookUserAgent], "\(userAgents)")
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

/// Reads `count` records of a topic from its beginning (all it holds once it holds that
/// many), without joining a group: nothing to wait for but the records.
func consume(topic: String, count: Int, logger: Logger) async throws -> [KafkaConsumerMessage] {
    let reader = try TopicReader(topic: topic, logger: logger)
    let deadline = ContinuousClock.now + .seconds(60)
    while true {
        let records = try await reader.readNew()
        if records.count >= count { return records }
        guard ContinuousClock.now < deadline else {
            throw TestFailure("\(topic) did not receive \(count) records in 60 s (it holds \(records.count))")
        }
        try await Task.sleep(for: .milliseconds(200))
    }
}

/// Every record a topic holds once nothing more has arrived for 2 s (records published
/// just after the work they follow is committed are counted in), without joining a group.
func consumeAll(topic: String, logger: Logger) async throws -> [KafkaConsumerMessage] {
    let reader = try TopicReader(topic: topic, logger: logger)
    let deadline = ContinuousClock.now + .seconds(30)
    try await Task.sleep(for: .seconds(1))
    var last = -1
    var records = try await reader.readNew()
    while records.count != last && ContinuousClock.now < deadline {
        last = records.count
        try await Task.sleep(for: .seconds(2))
        records = try await reader.readNew()
    }
    return records
}

/// Reads a topic's partitions to their ends as they grow, remembering where it stopped.
/// The end is where a read finds nothing more: the local broker's high watermark can trail
/// the records it serves.
final class TopicReader {
    let topic: String
    let reader: KafkaOffsetReader
    private var partitions: [Int32] = []
    private var positions: [Int32: Int64] = [:]
    private(set) var records: [KafkaConsumerMessage] = []

    init(topic: String, logger: Logger) throws {
        self.topic = topic
        // The local broker holds a fetch for its whole wait even at the end of the log.
        self.reader = try KafkaOffsetReader(
            bootstrapServers: TestEnvironment.kafkaBrokers, properties: ["fetch.wait.max.ms": "20"], logger: logger)
    }

    /// Everything read so far, after reading what arrived since the last call.
    func readNew() async throws -> [KafkaConsumerMessage] {
        if partitions.isEmpty { partitions = try await reader.partitions(of: topic) }
        let (reader, topic, positions) = (self.reader, self.topic, self.positions)
        // The partitions side by side: each read ends with a fetch that finds nothing.
        let reads = try await withThrowingTaskGroup(of: (Int32, [KafkaConsumerMessage]).self) { group in
            for partition in partitions {
                group.addTask {
                    (partition, try await reader.records(topic: topic, partition: partition, from: positions[partition] ?? 0, to: .max))
                }
            }
            return try await group.reduce(into: [:]) { $0[$1.0] = $1.1 }
        }
        for partition in partitions {
            guard let read = reads[partition], let last = read.last else { continue }
            records += read
            self.positions[partition] = last.offset + 1
        }
        return records
    }
}
