import Foundation
import Kafka
import KafkaTesting
import BatchProcessing
import Logging
import Persistence
import Shared
import Synchronization
import Testing

@testable import Evaluator

/// The relay against the real broker and Postgres, with a fault in front of the producer:
/// the records of chosen devices on one event topic are refused (as when that topic's
/// partition has no leader) for a while.
@Suite struct EventRelayTests {
    let logger = Logger.forTests("test.relay", level: .critical)

    /// The producer, less the records a fault refuses; remembers what the broker took, in order.
    final class FaultyPublisher: EventPublisher {
        let producer: KafkaProducer
        let refuses: @Sendable (KafkaRecord) -> Bool
        private let taken = Mutex<[(device: String, eventId: String, at: ContinuousClock.Instant)]>([])

        init(producer: KafkaProducer, refuses: @escaping @Sendable (KafkaRecord) -> Bool) {
            self.producer = producer
            self.refuses = refuses
        }

        var published: [(device: String, eventId: String, at: ContinuousClock.Instant)] { taken.withLock { $0 } }

        func sendDeadLetter(_ letter: DeadLetter) async throws -> DeadLetter.Copy {
            try await producer.sendDeadLetter(letter)
        }

        func send(_ records: [KafkaRecord]) async -> [Result<KafkaDeliveryReceipt, KafkaError>] {
            let passing = records.filter { !refuses($0) }
            var results = await producer.send(passing)[...]
            return records.map { record in
                guard !refuses(record) else {
                    return .failure(KafkaError(message: "no leader", code: .leaderNotAvailable, isRetriable: true))
                }
                let result = results.removeFirst()
                if case .success = result {
                    let eventId = record.headers.first { $0.key == "event-id" }?.value.map { String(decoding: $0, as: UTF8.self) }
                    taken.withLock {
                        $0.append((String(decoding: record.key ?? [], as: UTF8.self), eventId ?? "", ContinuousClock.now))
                    }
                }
                return result
            }
        }
    }

    /// While device `a`'s check-in cannot be published, its later check-out (on the other
    /// topic) waits for it, and partition 1's events go out at once; once the fault passes,
    /// `a`'s events go in the order they were decided.
    @Test func aFailingPublishNeitherReordersItsDeviceNorHoldsBackAnotherPartition() async throws {
        let logger = logger
        let topics = Topics(
            fixes: KafkaTestSupport.uniqueName("fixes"), fixesDeadLetter: KafkaTestSupport.uniqueName("fixes-dlq"),
            checkIns: KafkaTestSupport.uniqueName("checkins"), checkOuts: KafkaTestSupport.uniqueName("checkouts"),
            eventsDeadLetter: KafkaTestSupport.uniqueName("events-dlq"))
        try await KafkaAdmin.createTopics(
            topics.all.map { (name: $0, partitions: 2) }, bootstrapServers: TestEnvironment.kafkaBrokers, timeout: .seconds(30),
            logger: logger)
        let producer = try KafkaProducer(
            configuration: KafkaProducerConfiguration(bootstrapServers: TestEnvironment.kafkaBrokers, clientId: "test-relay"),
            logger: logger)
        // Lifted by the test once it has seen what must not wait for a's check-in.
        let faultHolds = Mutex(true)
        let publisher = FaultyPublisher(producer: producer) { record in
            record.topic == topics.checkIns && record.key == Array("a".utf8) && faultHolds.withLock { $0 }
        }
        try await withMigratedDatabase(url: try await freshDatabaseURL(logger: logger), logger: logger) { database in
            let outbox = EventOutboxStore(database: database, logger: logger)
            let leases = PartitionLeases()
            leases.granted(
                [KafkaTopicPartition(topic: topics.fixes, partition: 0): 1, KafkaTopicPartition(topic: topics.fixes, partition: 1): 1],
                nextOffsets: [:])
            func event(_ id: String, device: String, partition: Int32, checkIn: Bool) -> OutboxEvent {
                OutboxEvent(
                    sourcePartition: partition, topic: checkIn ? topics.checkIns : topics.checkOuts, deviceId: device,
                    eventId: id, eventType: checkIn ? "checkin" : "checkout", event: "{\"eventId\":\"\(id)\"}")
            }
            // Decided in this order: a's three events on partition 0, b's on partition 1.
            try await database.withTransaction { connection in
                try await outbox.add(
                    [
                        event("a1", device: "a", partition: 0, checkIn: true), event("a2", device: "a", partition: 0, checkIn: false),
                        event("a3", device: "a", partition: 0, checkIn: true), event("c1", device: "c", partition: 0, checkIn: false),
                        event("b1", device: "b", partition: 1, checkIn: true), event("b2", device: "b", partition: 1, checkIn: false),
                    ], group: "relay-test", sourceTopic: topics.fixes, on: connection)
            }
            let relay = EventRelay(
                outbox: outbox, publisher: publisher, leases: leases, group: "relay-test", topics: topics,
                interval: .milliseconds(200), logger: logger)
            let lifted = Mutex(ContinuousClock.now)
            try await withServicesRunning([producer, relay]) {
                // The other partition, and the other device of a's partition, do not wait for a:
                // they go out while the broker still refuses a's check-in.
                try await KafkaTestSupport.waitUntil("b1, b2 and c1 published while a1 is refused", within: .seconds(60)) {
                    Set(publisher.published.map(\.eventId)).isSuperset(of: ["b1", "b2", "c1"])
                }
                #expect(!publisher.published.contains { $0.device == "a" }, "\(publisher.published.map(\.eventId))")
                lifted.withLock { $0 = .now }
                faultHolds.withLock { $0 = false }
                try await KafkaTestSupport.waitUntil("every event published", within: .seconds(60)) {
                    publisher.published.count == 6
                }
                // Each leaves the outbox once the broker has it.
                let deadline = ContinuousClock.now + .seconds(10)
                while try await !outbox.waiting(group: "relay-test", sourceTopic: topics.fixes, partitions: [0, 1], limit: 10)
                    .isEmpty, ContinuousClock.now < deadline
                {
                    try await Task.sleep(for: .milliseconds(100))
                }
            }
            let published = publisher.published
            // a's events in decision order, though the broker refused a1 while it took the others.
            #expect(published.map(\.eventId).filter { $0.hasPrefix("a") } == ["a1", "a2", "a3"])
            // Nothing of a went before the fault was over.
            let liftedAt = lifted.withLock { $0 }
            #expect(published.filter { $0.device == "a" }.allSatisfy { $0.at >= liftedAt })
            #expect(try await outbox.waiting(group: "relay-test", sourceTopic: topics.fixes, partitions: [0, 1], limit: 10).isEmpty)
        }
    }

    /// An event the broker refuses for its size (committed, so it cannot be undone) goes to
    /// the events dead-letter topic cut to fit, with its size and digest, and the device's
    /// next event is published after it.
    @Test func anEventTooLargeForTheBrokerIsDeadLetteredCutToFitAndItsDeviceMovesOn() async throws {
        let logger = logger
        let topics = Topics(
            fixes: KafkaTestSupport.uniqueName("fixes"), fixesDeadLetter: KafkaTestSupport.uniqueName("fixes-dlq"),
            checkIns: KafkaTestSupport.uniqueName("checkins"), checkOuts: KafkaTestSupport.uniqueName("checkouts"),
            eventsDeadLetter: KafkaTestSupport.uniqueName("events-dlq"))
        try await KafkaAdmin.createTopics(
            topics.all.map { (name: $0, partitions: 1) }, bootstrapServers: TestEnvironment.kafkaBrokers, timeout: .seconds(30),
            logger: logger)
        let producer = try KafkaProducer(
            configuration: KafkaProducerConfiguration(bootstrapServers: TestEnvironment.kafkaBrokers, clientId: "test-relay"),
            logger: logger)
        let publisher = FaultyPublisher(producer: producer) { _ in false }
        let huge = String(repeating: "x", count: producer.maximumMessageBytes + 1000)
        try await withMigratedDatabase(url: try await freshDatabaseURL(logger: logger), logger: logger) { database in
            let outbox = EventOutboxStore(database: database, logger: logger)
            let leases = PartitionLeases()
            leases.granted([KafkaTopicPartition(topic: topics.fixes, partition: 0): 1], nextOffsets: [:])
            try await database.withTransaction { connection in
                try await outbox.add(
                    [
                        OutboxEvent(
                            sourcePartition: 0, topic: topics.checkIns, deviceId: "d", eventId: "big", eventType: "checkin",
                            event: "{\"pad\":\"\(huge)\"}"),
                        OutboxEvent(
                            sourcePartition: 0, topic: topics.checkOuts, deviceId: "d", eventId: "next", eventType: "checkout",
                            event: "{}"),
                    ], group: "relay-test", sourceTopic: topics.fixes, on: connection)
            }
            let relay = EventRelay(
                outbox: outbox, publisher: publisher, leases: leases, group: "relay-test", topics: topics,
                interval: .milliseconds(200), logger: logger)
            try await withServicesRunning([producer, relay]) {
                try await KafkaTestSupport.waitUntil("the next event published", within: .seconds(60)) {
                    publisher.published.map(\.eventId) == ["next"]
                }
                let letters = try await consume(topic: topics.eventsDeadLetter, count: 1, logger: logger)
                func header(_ name: String) -> String? {
                    letters[0].headers.first { $0.key == Topics.deadLetterHeaderPrefix + name }?.value
                        .map { String(decoding: $0, as: UTF8.self) }
                }
                #expect(header("truncated") == "true")
                #expect(header("original-size") == String(huge.utf8.count + 10))
                #expect(header("origin-partition") == "0")
                #expect(letters[0].value.count < producer.maximumMessageBytes)
                // Both leave the outbox: the one set aside and the one published after it (each
                // removed once the broker acknowledged it, a moment after the publish).
                try await waitUntil("the outbox emptied", within: .seconds(30)) {
                    try await outbox.waiting(group: "relay-test", sourceTopic: topics.fixes, partitions: [0], limit: 10).isEmpty
                }
            }
        }
    }
}
