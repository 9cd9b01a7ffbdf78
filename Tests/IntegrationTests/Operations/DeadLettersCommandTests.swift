import BatchProcessing
import Foundation
import Kafka
import KafkaTesting
import Logging
import Shared
import Testing

/// `checkin dead-letters list` and `redrive`, run as an operator runs them, against the real
/// broker and Postgres.
@Suite struct DeadLettersCommandTests {
    @Test func listShowsWhatWaitsAndRedriveSendsItBackOnce() async throws {
        let logger = Logger.forTests("test.dead-letters-command")
        let suffix = UUID().uuidString.prefix(8).lowercased()
        let topics = Topics(
            fixes: "test-\(suffix).fixes", fixesDeadLetter: "test-\(suffix).fixes.dlq", checkIns: "test-\(suffix).checkins",
            checkOuts: "test-\(suffix).checkouts", eventsDeadLetter: "test-\(suffix).events.dlq")
        try await KafkaAdmin.createTopics(
            topics.all.map { (name: $0, partitions: 1) }, bootstrapServers: TestEnvironment.kafkaBrokers, timeout: .seconds(30),
            logger: logger)
        let prefix = Topics.deadLetterHeaderPrefix
        func letter(_ value: String, offset: Int64, reason: String) -> DeadLetter {
            DeadLetter(
                of: KafkaConsumerMessage(
                    topic: topics.fixes, partition: 0, offset: offset, key: Array("device-\(offset)".utf8), value: Array(value.utf8)),
                topic: topics.fixesDeadLetter, reason: reason, headerPrefix: prefix)
        }
        let producer = try KafkaProducer(
            configuration: KafkaProducerConfiguration(bootstrapServers: TestEnvironment.kafkaBrokers, clientId: "test-dead-letters"),
            logger: logger)
        try await withServicesRunning([producer]) {
            try await producer.sendAll([
                letter(#"{"fix":1}"#, offset: 7, reason: "zone rule refused it").record(fittingIn: 1 << 20),
                letter(#"{"fix":2}"#, offset: 8, reason: "too large").summary(),
            ])
        }
        let environment = [
            "CHECKIN_KAFKA_BROKERS": TestEnvironment.kafkaBrokers, "CHECKIN_DATABASE_URL": TestEnvironment.databaseURL,
            "CHECKIN_TOPIC_FIXES": topics.fixes, "CHECKIN_TOPIC_FIXES_DLQ": topics.fixesDeadLetter,
            "CHECKIN_TOPIC_CHECKINS": topics.checkIns, "CHECKIN_TOPIC_CHECKOUTS": topics.checkOuts,
            "CHECKIN_TOPIC_EVENTS_DLQ": topics.eventsDeadLetter,
        ]

        let listed = try await CommandOutcome.run(["dead-letters", "list", "--topic", "fixes"], environment: environment)
        #expect(listed.exitCode == 0, "\(listed.standardError)")
        let rows = listed.standardOutput.split(separator: "\n").map(String.init)
        let first = try #require(rows.first { $0.contains("device-7") })
        #expect(first.contains(topics.fixes) && first.contains("zone rule refused it"))
        let cut = try #require(rows.first { $0.contains("too large") })
        #expect(cut.contains("cannot: only a cut copy was kept"))
        #expect(listed.standardError.contains("2 dead letters not sent back; of those listed, 1 cannot go back"))

        let redriven = try await CommandOutcome.run(["dead-letters", "redrive", "--topic", "fixes"], environment: environment)
        #expect(redriven.exitCode == 0, "\(redriven.standardError)")
        #expect(redriven.standardOutput.hasPrefix("sent back 1 dead letters: 1 to \(topics.fixes)\n"))
        #expect(redriven.standardOutput.contains("1 cannot go back and stay on the dead-letter topic"))
        let back = try await consume(topic: topics.fixes, count: 1, logger: logger)
        #expect(back.map { String(decoding: $0.value, as: UTF8.self) } == [#"{"fix":1}"#])

        // Each once: nothing waits any more, and a second redrive sends nothing.
        let again = try await CommandOutcome.run(["dead-letters", "redrive", "--topic", "fixes"], environment: environment)
        #expect(again.standardOutput.hasPrefix("sent back 0 dead letters\n"))
        let after = try await CommandOutcome.run(["dead-letters", "list", "--topic", "fixes"], environment: environment)
        #expect(after.standardOutput.contains("(none)"))
        #expect(try await consumeAll(topic: topics.fixes, logger: logger).count == 1)
    }

    /// A dead-letter topic the broker does not have (no service started yet, or a name that
    /// is not the pipeline's) is named with the variable that names it, not as the broker's code.
    @Test func aTopicTheBrokerDoesNotHaveIsNamedWithItsVariable() async throws {
        let missing = "test-\(UUID().uuidString.prefix(8).lowercased()).events.dlq"
        let environment = [
            "CHECKIN_KAFKA_BROKERS": TestEnvironment.kafkaBrokers, "CHECKIN_DATABASE_URL": TestEnvironment.databaseURL,
            "CHECKIN_TOPIC_EVENTS_DLQ": missing,
        ]
        for command in ["list", "redrive"] {
            let outcome = try await CommandOutcome.run(["dead-letters", command, "--topic", "events"], environment: environment)
            #expect(outcome.exitCode == 1)
            #expect(
                outcome.standardError.contains("\(missing) (CHECKIN_TOPIC_EVENTS_DLQ) does not exist on the broker at"),
                "\(outcome.standardError)")
            #expect(!outcome.standardError.contains("UNKNOWN_TOPIC"), "\(outcome.standardError)")
        }
    }
}
