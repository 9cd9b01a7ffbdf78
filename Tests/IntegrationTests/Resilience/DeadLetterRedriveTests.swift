import BatchProcessing
import Foundation
import Kafka
import KafkaTesting
import Logging
import Persistence
import PostgresNIO
import Shared
import Testing

/// Dead letters go back to the pipeline once what set them aside is mended, each once.
@Suite struct DeadLetterRedriveTests {
    /// A device's events, refused by the database (a rule since dropped), reach the partner
    /// once they are sent back from the events' dead-letter topic; a second redrive finds
    /// nothing more to send.
    @Test func eventsRefusedUntilTheCauseIsMendedReachThePartnerOnceSentBack() async throws {
        var configured = PipelineHarness()
        configured.databaseURL = try await freshDatabaseURL(logger: configured.logger)
        let harness = configured
        try await harness.run { ingestPort, received in
            let logger = harness.logger
            let configuration = try harness.databaseConfiguration()
            // A rule that refuses this device's deliveries, as a faulty deployment might.
            try await Database.withTemporaryClient(configuration: configuration, logger: logger) { database in
                try await database.client.perform(
                    """
                    CREATE FUNCTION refuse_for_the_test() RETURNS trigger LANGUAGE plpgsql AS $$
                    BEGIN
                        IF NEW.device_id LIKE 'refused-%' THEN RAISE EXCEPTION 'deliveries refused for the test'; END IF;
                        RETURN NEW;
                    END $$
                    """, logger: logger)
                try await database.client.perform(
                    """
                    CREATE TRIGGER refuse_for_the_test BEFORE INSERT ON deliveries
                       FOR EACH ROW EXECUTE FUNCTION refuse_for_the_test()
                    """, logger: logger)
            }
            let refused = TestTrip(projectId: harness.projectId, deviceId: "refused-" + UUID().uuidString.prefix(8).lowercased())
            let url = "http://127.0.0.1:\(ingestPort)/v1/fixes"
            #expect(try await post(try refused.batch(0..<9), to: url, key: harness.deviceKey).status == 202)
            let deadLetters = try await consume(topic: harness.topics.eventsDeadLetter, count: 2, logger: logger)
            #expect(deadLetters.allSatisfy { $0.headerTexts["checkin-error"]?.contains("deliveries refused for the test") == true })
            #expect(await received.payloads.filter { $0.data.deviceId == refused.deviceId }.isEmpty)

            // Mended: the rule is dropped. The dead letters go back.
            try await Database.withTemporaryClient(configuration: configuration, logger: logger) { database in
                try await database.client.perform("DROP TRIGGER refuse_for_the_test ON deliveries", logger: logger)
            }
            let reader = try KafkaOffsetReader(
                bootstrapServers: TestEnvironment.kafkaBrokers, properties: ["fetch.wait.max.ms": "20"], logger: logger)
            let producer = try KafkaProducer(
                configuration: KafkaProducerConfiguration(bootstrapServers: TestEnvironment.kafkaBrokers, clientId: "test-redrive"),
                logger: logger)
            let topics = harness.topics
            let (waiting, outcome, waitingAfter) = try await Database.withTemporaryClient(
                configuration: configuration, logger: logger
            ) { database in
                let redrive = DeadLetterRedrive(
                    topic: topics.eventsDeadLetter, destinations: [topics.checkIns, topics.checkOuts],
                    headerPrefix: Topics.deadLetterHeaderPrefix, reader: reader,
                    positions: DeadLetterRedriveStore(database: database, logger: logger), logger: logger)
                let waiting = try await redrive.waiting(before: Date())
                let outcome = try await withServicesRunning([producer]) { try await redrive.send(waiting, with: producer) }
                return (waiting, outcome, try await redrive.waiting(before: Date()))
            }
            #expect(waiting.count == 2)
            #expect(waiting.allSatisfy { $0.unsendable == nil })
            #expect(Set(waiting.compactMap(\.origin)) == [topics.checkIns, topics.checkOuts])
            #expect(outcome.sent == [topics.checkIns: 1, topics.checkOuts: 1])
            #expect(waitingAfter.isEmpty)

            try await received.wait(timeout: .seconds(60)) { refused.isComplete($0) }
            let mine = await received.payloads.filter { $0.data.deviceId == refused.deviceId }
            #expect(mine.map(\.data.type) == [.checkin, .checkout])
        }
    }

    /// A copy cut to fit the dead-letter topic, or one naming a topic outside the pipeline,
    /// is listed with why it cannot go back, is not sent, and does not stop the others.
    @Test func lettersThatCannotGoBackAreNamedAndPassedOver() async throws {
        let logger = Logger.forTests("test.redrive")
        let suffix = UUID().uuidString.prefix(8).lowercased()
        let (deadLetterTopic, origin) = ("test-\(suffix).fixes.dlq", "test-\(suffix).fixes")
        try await KafkaAdmin.createTopics(
            [(name: deadLetterTopic, partitions: 1), (name: origin, partitions: 1)], bootstrapServers: TestEnvironment.kafkaBrokers,
            timeout: .seconds(30), logger: logger)
        let producer = try KafkaProducer(
            configuration: KafkaProducerConfiguration(bootstrapServers: TestEnvironment.kafkaBrokers, clientId: "test-redrive"),
            logger: logger)
        func original(_ value: String, from topic: String, offset: Int64) -> KafkaConsumerMessage {
            KafkaConsumerMessage(
                topic: topic, partition: 0, offset: offset, key: Array("device-a".utf8), value: Array(value.utf8),
                headers: [KafkaHeader(key: "trace", value: Array("t-\(offset)".utf8))])
        }
        let prefix = Topics.deadLetterHeaderPrefix
        let whole = DeadLetter(
            of: original("first", from: origin, offset: 0), topic: deadLetterTopic, reason: "refused", headerPrefix: prefix)
        let elsewhere = DeadLetter(
            of: original("second", from: "someone-elses-topic", offset: 1), topic: deadLetterTopic, reason: "refused",
            headerPrefix: prefix)
        let cut = DeadLetter(
            of: original("third", from: origin, offset: 2), topic: deadLetterTopic, reason: "too large", headerPrefix: prefix)
        let last = DeadLetter(
            of: original("fourth", from: origin, offset: 3), topic: deadLetterTopic, reason: "refused", headerPrefix: prefix)
        try await withServicesRunning([producer]) {
            try await producer.sendAll([
                whole.record(fittingIn: 1 << 20), elsewhere.record(fittingIn: 1 << 20), cut.summary(), last.record(fittingIn: 1 << 20),
            ])
        }

        let reader = try KafkaOffsetReader(
            bootstrapServers: TestEnvironment.kafkaBrokers, properties: ["fetch.wait.max.ms": "20"], logger: logger)
        let resent = try KafkaProducer(
            configuration: KafkaProducerConfiguration(bootstrapServers: TestEnvironment.kafkaBrokers, clientId: "test-redrive"),
            logger: logger)
        let (waiting, outcome) = try await withMigratedDatabase(url: TestEnvironment.databaseURL, logger: logger) { database in
            let redrive = DeadLetterRedrive(
                topic: deadLetterTopic, destinations: [origin], headerPrefix: prefix, reader: reader,
                positions: DeadLetterRedriveStore(database: database, logger: logger), logger: logger)
            let waiting = try await redrive.waiting(before: Date())
            // One record a part: each part moves the position past what it covers.
            let outcome = try await withServicesRunning([resent]) {
                try await redrive.redriveAll(before: Date(), with: resent, partLimit: 1)
            }
            #expect(try await redrive.waiting(before: Date()).isEmpty)
            return (waiting, outcome)
        }
        #expect(waiting.map { $0.unsendable == nil } == [true, false, false, true])
        #expect(waiting[1].unsendable?.contains("someone-elses-topic") == true)
        #expect(waiting[2].unsendable?.contains("cut copy") == true)
        #expect(outcome.sent == [origin: 2])
        #expect(outcome.unsendable.map(\.record.offset) == [1, 2])

        // Sent back as they were: key, value and own headers, without the dead-letter ones.
        let back = try await consume(topic: origin, count: 2, logger: logger)
        #expect(back.map { String(decoding: $0.value, as: UTF8.self) } == ["first", "fourth"])
        #expect(back.allSatisfy { $0.key == Array("device-a".utf8) })
        #expect(back.map(\.headerTexts) == [["trace": "t-0"], ["trace": "t-3"]])
    }
}
