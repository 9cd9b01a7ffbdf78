import ArgumentParser
import BatchProcessing
import CommandSupport
import Foundation
import Kafka
import Logging
import Persistence
import Shared

/// `checkin dead-letters`: the records the pipeline set aside, and sending them back once
/// what set them aside is mended.
struct DeadLettersCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dead-letters", abstract: "List the records set aside, or send them back.",
        discussion: """
            A fix the evaluator could not process goes to CHECKIN_TOPIC_FIXES_DLQ; an event the notifier could not \
            queue (or the broker refused) goes to CHECKIN_TOPIC_EVENTS_DLQ, each with why (checkin-error) and where \
            it came from (checkin-origin-*). Once the cause is mended, `redrive` sends them back to the topic they \
            came from, key, value and own headers unchanged, and remembers in Postgres how far it went, so each is \
            sent back once. Those set aside again during a redrive wait for the next one.
            """,
        subcommands: [List.self, Redrive.self])

    /// Which dead-letter topic.
    enum Source: String, ExpressibleByArgument, CaseIterable {
        case fixes, events

        /// The variable that names its topic.
        var topicVariable: String {
            switch self {
            case .fixes: "CHECKIN_TOPIC_FIXES_DLQ"
            case .events: "CHECKIN_TOPIC_EVENTS_DLQ"
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list", abstract: "List the dead letters not sent back yet.")
        @Option(help: "fixes (CHECKIN_TOPIC_FIXES_DLQ) or events (CHECKIN_TOPIC_EVENTS_DLQ).") var topic: Source
        @Option(parsing: .unconditional, help: "How many to list (1 to 10000).") var limit: Int = 100

        func validate() throws {
            guard (1...10_000).contains(limit) else { throw CommandFailure("--limit must be between 1 and 10000", helpOf: Self.self) }
        }

        func run() async throws {
            try requireDatabaseAccess(Self.self)
            let (topic, limit) = (topic, limit)
            let letters = try await withRedrive(of: topic) { redrive, _, _ in
                try await redrive.waiting(before: Date(), limit: limit + 1)
            }
            let listed = Array(letters.prefix(limit))
            print(DeadLettersCommand.table(listed))
            let count = letters.count > limit ? "more than \(limit)" : "\(letters.count)"
            let unsendable = listed.filter { $0.unsendable != nil }.count
            FileHandle.standardError.write(
                Data("\(count) dead letters not sent back; of those listed, \(unsendable) cannot go back\n".utf8))
        }
    }

    struct Redrive: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "redrive", abstract: "Send dead letters back where they came from.")
        @Option(help: "fixes (CHECKIN_TOPIC_FIXES_DLQ) or events (CHECKIN_TOPIC_EVENTS_DLQ).") var topic: Source

        func run() async throws {
            try requireDatabaseAccess(Self.self)
            let topic = topic
            let started = Date()
            let outcome = try await withRedrive(of: topic) { redrive, settings, logger in
                let producer = try KafkaProducer(
                    configuration: settings.producerConfiguration(clientId: "checkin-redrive"), logger: logger)
                return try await withThrowingTaskGroup(of: DeadLetterRedrive.Outcome?.self) { tasks in
                    tasks.addTask {
                        try await producer.run()
                        return nil
                    }
                    // Every record is acknowledged by the broker when `redriveAll` returns.
                    let outcome = try await redrive.redriveAll(before: started, with: producer)
                    tasks.cancelAll()
                    return outcome
                }
            }
            let sent = outcome.sent.sorted { $0.key < $1.key }.map { "\($0.value) to \($0.key)" }
            print("sent back \(outcome.sent.values.reduce(0, +)) dead letters\(sent.isEmpty ? "" : ": " + sent.joined(separator: ", "))")
            if !outcome.unsendable.isEmpty {
                print("\(outcome.unsendable.count) cannot go back and stay on the dead-letter topic:")
                print(DeadLettersCommand.table(outcome.unsendable))
            }
        }
    }

    static func table(_ letters: [DeadLetterRedrive.Letter]) -> String {
        StatusTable.table(
            ["PARTITION", "OFFSET", "KEY", "BYTES", "SET ASIDE", "BACK TO", "REASON"],
            letters.map { letter -> [String] in
                let record = letter.record
                let key: String = record.key.map { String(decoding: $0, as: UTF8.self) } ?? "-"
                let stamped: String = record.timestamp.map { RFC3339.format($0) } ?? "-"
                let destination: String = letter.unsendable.map { "cannot: " + $0 } ?? letter.origin ?? "-"
                return [
                    String(record.partition), String(record.offset), key, String(record.value.count), stamped, destination, letter.reason,
                ]
            })
    }
}

/// Runs `body` with the redrive of the chosen dead-letter topic (Postgres migrated, the broker's
/// reader open), the process's settings and the command's logger.
private func withRedrive<Result: Sendable>(
    of source: DeadLettersCommand.Source,
    _ body: @Sendable (DeadLetterRedrive, ProcessSettings, Logger) async throws -> Result
) async throws -> Result {
    let settings = try ProcessSettings()
    let topics = settings.topics
    let (topic, destinations): (String, Set<String>) =
        switch source {
        case .fixes: (topics.fixesDeadLetter, [topics.fixes])
        case .events: (topics.eventsDeadLetter, [topics.checkIns, topics.checkOuts])
        }
    return try await withDatabase { database, logger in
        // The local broker holds every fetch for its whole wait, even at the end of a partition.
        let properties = ["fetch.wait.max.ms": "100"].merging(settings.environment.kafkaProperties) { _, configured in configured }
        let reader = try KafkaOffsetReader(bootstrapServers: settings.brokers, properties: properties, logger: logger)
        do {
            _ = try await reader.partitions(of: topic)
        } catch let error as KafkaError where error.code == .unknownTopicOrPartition {
            throw CommandFailure(
                "\(topic) (\(source.topicVariable)) does not exist on the broker at \(settings.brokers): nothing was set aside "
                    + "there yet (the services create their topics when they start), or the variable names another topic")
        }
        let redrive = DeadLetterRedrive(
            topic: topic, destinations: destinations, headerPrefix: Topics.deadLetterHeaderPrefix, reader: reader,
            positions: DeadLetterRedriveStore(database: database, logger: logger), logger: logger)
        return try await body(redrive, settings, logger)
    }
}
