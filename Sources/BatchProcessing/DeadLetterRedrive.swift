import Foundation
import Kafka
import Logging
import Persistence

/// Sends dead letters back to the topic they came from, once what set them aside is mended
/// (a bug fixed, a limit raised, a zone corrected): each record's key, value and own headers,
/// without the headers that describe its dead-lettering.
///
/// How far each dead-letter partition was sent back is kept in Postgres, moved only once the
/// broker acknowledged what it covers, so a record is sent back once; should a redrive stop
/// in between, the pipeline takes the repeat as it takes any (a queued event is not queued
/// twice; a fix the device has passed is skipped as late). Dead letters stamped after the
/// redrive began (one that fails again and is set aside anew) are left for the next redrive.
package struct DeadLetterRedrive: Sendable {
    /// A dead letter not sent back yet, and whether it can be.
    package struct Letter: Sendable {
        package var record: KafkaConsumerMessage
        /// Why it was set aside (`checkin-error`).
        package var reason: String
        /// Where it came from: the pipeline topic it goes back to.
        package var origin: String?
        /// Why it cannot go back, when it cannot: a copy cut to fit the dead-letter topic, or no
        /// pipeline topic to go back to.
        package var unsendable: String?

        /// The topic it goes back to; nil when it cannot go back.
        var destination: String? { unsendable == nil ? origin : nil }
    }

    package let topic: String
    /// The topics a dead letter may go back to: the pipeline's own, never one a header names otherwise.
    package let destinations: Set<String>
    let reader: KafkaOffsetReader
    let positions: DeadLetterRedriveStore
    let logger: Logger

    /// The prefix of the headers a dead-lettering adds (``DeadLetter``'s).
    let prefix: String

    package init(
        topic: String, destinations: Set<String>, headerPrefix: String, reader: KafkaOffsetReader,
        positions: DeadLetterRedriveStore, logger: Logger
    ) {
        self.topic = topic
        self.prefix = headerPrefix
        self.destinations = destinations
        self.reader = reader
        self.positions = positions
        self.logger = logger
    }

    /// The dead letters not sent back yet and stamped before `before`, in each partition's
    /// order: at most `limit` of each partition, so that a long dead-letter topic is read and
    /// sent back a part at a time (``redriveAll(before:with:)``).
    package func waiting(before: Date, limit: Int = 10_000) async throws -> [Letter] {
        let partitions = try await reader.partitions(of: topic)
        let watermarks = try await reader.watermarks(topic: topic, partitions: partitions)
        let from = try await positions.positions(topic: topic)
        var letters: [Letter] = []
        for partition in partitions.sorted() {
            let start = Self.nextOffset(sentBackTo: from[partition], watermarks: watermarks[partition])
            let records = try await reader.records(
                topic: topic, partition: partition, from: start, to: start + Int64(limit))
            for record in records {
                if let stamped = record.timestamp, stamped >= before { break }
                letters.append(letter(of: record))
            }
        }
        return letters
    }

    /// Where a partition's next redrive reads: past what was sent back, and never before the
    /// first record kept (records removed by the topic's retention are gone).
    package static func nextOffset(sentBackTo position: Int64?, watermarks: KafkaWatermarks?) -> Int64 {
        max(position ?? 0, watermarks?.low ?? 0)
    }

    /// Sends back every dead letter stamped before `before`, a part at a time.
    package func redriveAll(before: Date, with producer: KafkaProducer, partLimit: Int = 10_000) async throws -> Outcome {
        var outcome = Outcome()
        while true {
            let letters = try await waiting(before: before, limit: partLimit)
            guard !letters.isEmpty else { return outcome }
            let part = try await send(letters, with: producer)
            outcome.sent.merge(part.sent, uniquingKeysWith: +)
            outcome.unsendable += part.unsendable
        }
    }

    func letter(of record: KafkaConsumerMessage) -> Letter {
        func header(_ name: String) -> String? {
            record.headers.first { $0.key == prefix + name }?.value.map { String(decoding: $0, as: UTF8.self) }
        }
        let origin = header(DeadLetter.HeaderName.originTopic)
        var unsendable: String?
        if header(DeadLetter.HeaderName.truncated) != nil {
            unsendable = "only a cut copy was kept (the original did not fit the dead-letter topic)"
        } else if let origin, !destinations.contains(origin) {
            unsendable = "it came from \(origin), not a topic of this pipeline"
        } else if origin == nil {
            unsendable = "it names no topic it came from"
        }
        return Letter(record: record, reason: header(DeadLetter.HeaderName.error) ?? "", origin: origin, unsendable: unsendable)
    }

    /// What a redrive did: how many records went back to each topic, and those that could not.
    package struct Outcome: Sendable {
        package var sent: [String: Int] = [:]
        package var unsendable: [Letter] = []
    }

    /// Sends `letters` (from ``waiting(before:)``) back, partition by partition: a partition's
    /// position moves past its letters once the broker has acknowledged every one sent.
    /// Those that cannot go back are passed over (they stay on the dead-letter topic).
    package func send(_ letters: [Letter], with producer: KafkaProducer) async throws -> Outcome {
        var outcome = Outcome()
        let byPartition = Dictionary(grouping: letters, by: \.record.partition)
        for partition in byPartition.keys.sorted() {
            let mine = byPartition[partition] ?? []
            guard let last = mine.last else { continue }
            let describing = Set(DeadLetter.HeaderName.describingWhole.map { prefix + $0 })
            let records = mine.compactMap { letter in
                letter.destination.map { destination in
                    KafkaRecord(
                        topic: destination, key: letter.record.key, value: letter.record.value,
                        headers: letter.record.headers.filter { !describing.contains($0.key) })
                }
            }
            try await producer.sendAll(records)
            try await positions.advance(topic: topic, partition: partition, to: last.record.offset + 1)
            for record in records { outcome.sent[record.topic, default: 0] += 1 }
            outcome.unsendable += mine.filter { $0.destination == nil }
            logger.info(
                "dead letters sent back",
                metadata: [
                    "topic": "\(topic)", "partition": "\(partition)", "sent": "\(records.count)", "through": "\(last.record.offset)",
                ])
        }
        return outcome
    }
}
