import BatchProcessing
import CommandSupport
import Foundation
import Kafka
import Logging
import Persistence
import Shared

/// Where the fixes a load lost are, so that a loss names its cause: a fix in the fixes topic
/// below the evaluators' committed offset was passed over by an evaluator, or set aside to the
/// dead-letter topic (named with the reason it carries); one above it is still to come; one the
/// topic does not hold was lost by the broker after it acknowledged it (the ingest answers 202
/// only then). Read only when fixes were lost: it reads the whole topic and its dead letters.
enum LostFixTrace {
    /// One line per fix id: `load-3-17: checkin.fixes[2] at 5120, below the evaluators' next offset 9000`.
    static func places(of fixIds: [String], logger: Logger) async throws -> [String] {
        guard !fixIds.isEmpty else { return [] }
        let settings = try ProcessSettings()
        let topic = settings.topics.fixes
        let group = settings.environment.string("CHECKIN_EVALUATOR_GROUP", default: "checkin-evaluator")
        let reader = try KafkaOffsetReader(
            bootstrapServers: settings.brokers, properties: settings.environment.kafkaProperties, logger: logger)
        let found = try await records(of: Set(fixIds), in: topic, reader: reader)
        let setAside = try await records(of: Set(fixIds), in: settings.topics.fixesDeadLetter, reader: reader)
        let partitions = try await reader.partitions(of: topic)
        let committed = try await withConfiguredDatabase { database, logger in
            try await OffsetStore(database: database, logger: logger).nextOffsets(group: group, topic: topic, partitions: partitions)
        }
        let errorHeader = Topics.deadLetterHeaderPrefix + DeadLetter.HeaderName.error
        return fixIds.map { id in
            guard let place = found[id] else { return "\(id): not in \(topic) (the broker does not hold it)" }
            let next = committed[place.partition]
            let relation =
                next.map { place.offset < $0 ? "below the evaluators' next offset \($0)" : "at or past the evaluators' next offset \($0)" }
                ?? "the evaluators committed nothing there"
            var line = "\(id): \(topic)[\(place.partition)] at \(place.offset), \(relation)"
            if let letter = setAside[id] {
                let reason = letter.headers.first { $0.key == errorHeader }?.value.map { String(decoding: $0, as: UTF8.self) }
                line += "; set aside to \(settings.topics.fixesDeadLetter): \(reason ?? "no reason given")"
            }
            return line
        }
    }

    /// The first record of each wanted fix id in `topic`, reading every partition from its start.
    private static func records(of fixIds: Set<String>, in topic: String, reader: KafkaOffsetReader) async throws
        -> [String: KafkaConsumerMessage]
    {
        let partitions = try await reader.partitions(of: topic)
        let watermarks = try await reader.watermarks(topic: topic, partitions: partitions)
        var wanted = fixIds
        var found: [String: KafkaConsumerMessage] = [:]
        for partition in partitions.sorted() where !wanted.isEmpty {
            guard let marks = watermarks[partition] else { continue }
            var next = marks.low
            while next < marks.high, !wanted.isEmpty {
                let records = try await reader.records(
                    topic: topic, partition: partition, from: next, to: min(next + 50_000, marks.high), timeout: .seconds(60))
                guard let last = records.last else { break }
                for record in records {
                    guard let id = fixId(in: record.value), wanted.remove(id) != nil else { continue }
                    found[id] = record
                }
                next = last.offset + 1
            }
        }
        return found
    }

    /// The `fixId` of a fix as the ingest writes it (`"fixId":"…"`).
    static func fixId(in value: [UInt8]) -> String? {
        let marker = Array(#""fixId":""#.utf8)
        guard let start = value.firstRange(of: marker)?.upperBound,
            let end = value[start...].firstIndex(of: UInt8(ascii: "\""))
        else { return nil }
        return String(decoding: value[start..<end], as: UTF8.self)
    }
}
