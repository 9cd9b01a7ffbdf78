import Crypto
import Foundation
import Kafka
import KafkaTesting
import Logging
import Persistence
import Shared
import Testing

/// A record the evaluator cannot copy to the dead-letter topic as it is (here one
/// nearly as large as the producer's whole message limit, so that the copy with its
/// origin headers is larger than the limit) still moves its partition on.
@Suite(.serialized) struct OversizedDeadLetterTests {
    /// A direct producer allowing 2 MB records writes, under one key, a valid fix, a
    /// 999,950-byte record that is not JSON, and another valid fix. Before, the copy was
    /// refused locally (`MSG_SIZE_TOO_LARGE`) and retried for ever, and the partition
    /// never moved.
    @Test func recordTooLargeToCopyIsDeadLetteredTruncatedAndThePartitionMovesOn() async throws {
        let harness = PipelineHarness()
        try await harness.run { _, _ in
            let trip = TestTrip(projectId: harness.projectId)
            let oversized = [UInt8]((0..<999_950).map { UInt8(ascii: "a") + UInt8($0 % 26) })
            let values = [
                Array(try JSONSerialization.data(withJSONObject: trip.fix(3))), oversized,
                Array(try JSONSerialization.data(withJSONObject: trip.fix(6))),
            ]
            let producer = try KafkaProducer(
                configuration: KafkaProducerConfiguration(
                    bootstrapServers: TestEnvironment.kafkaBrokers, clientId: "test-direct-large",
                    properties: ["message.max.bytes": "2000000"]),
                logger: harness.logger)
            var receipts: [KafkaDeliveryReceipt] = []
            try await withServicesRunning([producer]) {
                for value in values {
                    receipts.append(
                        try await producer.send(
                            KafkaRecord(topic: harness.topics.fixes, key: Array(trip.deviceId.utf8), value: value)))
                }
            }
            let partition = receipts[0].partition
            #expect(receipts.map(\.partition) == [partition, partition, partition])
            let oversizedOffset = receipts[1].offset

            let moved = try await waitForCommittedOffset(
                receipts[2].offset + 1, partition: partition, within: .seconds(60), harness)
            print("partition moved past a record too large to copy as it is in \(moved)")

            // The fix after it was evaluated: the trip's check-out.
            let events = try await consumeEvents(of: trip.deviceId, count: 2, harness)
            #expect(events.map(\.type) == [.checkin, .checkout])

            let deadLetters = try await consume(topic: harness.topics.fixesDeadLetter, count: 1, logger: harness.logger)
            let letter = try #require(deadLetters.first)
            let headers = letter.headerTexts
            #expect(headers["checkin-origin-topic"] == harness.topics.fixes)
            #expect(headers["checkin-origin-partition"] == String(partition))
            #expect(headers["checkin-origin-offset"] == String(oversizedOffset))
            #expect(headers["checkin-original-size"] == "999950")
            let digest = SHA256.hash(data: Data(oversized)).map { String(format: "%02x", $0) }.joined()
            #expect(headers["checkin-original-sha256"] == digest)
            #expect(headers["checkin-truncated"] == "true")
            #expect(headers["checkin-error"]?.isEmpty == false)
            #expect(letter.value.count < oversized.count)
            #expect(Array(oversized.prefix(letter.value.count)) == letter.value)
        }
    }
}

/// Waits until the evaluator's committed offset of a partition reaches `expected`;
/// returns how long that took, throws after `timeout`.
func waitForCommittedOffset(
    _ expected: Int64, partition: Int32, within timeout: Duration, _ harness: PipelineHarness
) async throws -> Duration {
    let logger = harness.logger
    let start = ContinuousClock.now
    while true {
        let offsets = try await Database.withTemporaryClient(configuration: try harness.databaseConfiguration(), logger: logger) {
            database in
            try await OffsetStore(database: database, logger: logger).nextOffsets(
                group: harness.evaluatorGroup, topic: harness.topics.fixes, partitions: [partition])
        }
        if let offset = offsets[partition], offset >= expected { return ContinuousClock.now - start }
        if ContinuousClock.now - start > timeout {
            throw TestFailure(
                "the committed offset of partition \(partition) is \(String(describing: offsets[partition])), not \(expected), after \(timeout)"
            )
        }
        try await Task.sleep(for: .milliseconds(250))
    }
}
