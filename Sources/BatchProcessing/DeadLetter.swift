import Crypto
import Kafka

/// A record set aside for a dead-letter topic, with why and where it came from, shaped
/// so that the producer can always send it: a record as large as a producer allows
/// cannot be copied with its origin headers added, and retrying such a copy would stop
/// its partition for good.
///
/// Produced by ``Kafka/KafkaProducer/sendDeadLetter(_:)``:
/// - whole when it fits (the original's key, value and headers, plus `<prefix>error` and
///   the origin headers);
/// - else cut to fit, with `<prefix>truncated: true`, `<prefix>original-size` (bytes of the
///   value) and `<prefix>original-sha256` (hex digest of the whole value), so that the
///   original can still be told apart and matched;
/// - and when the broker refuses even that as a record (a topic limit below the
///   producer's), as a summary without any of the original's bytes.
package struct DeadLetter: Sendable {
    /// The dead-letter topic.
    package var topic: String
    package var key: [UInt8]?
    package var value: [UInt8]
    /// The original's own headers.
    package var headers: [KafkaHeader]
    package var reason: String
    /// Where the original came from, as header names (without the prefix) and values,
    /// e.g. `origin-topic`, `origin-partition`, `origin-offset`.
    package var origin: [(name: String, value: String)]
    package var headerPrefix: String

    package init(
        topic: String, key: [UInt8]?, value: [UInt8], headers: [KafkaHeader] = [], reason: String,
        origin: [(name: String, value: String)], headerPrefix: String
    ) {
        self.topic = topic
        self.key = key
        self.value = value
        self.headers = headers
        self.reason = reason
        self.origin = origin
        self.headerPrefix = headerPrefix
    }

    /// A consumed record, from its topic, partition and offset.
    package init(of message: KafkaConsumerMessage, topic: String, reason: String, headerPrefix: String) {
        self.init(
            topic: topic, key: message.key, value: message.value, headers: message.headers, reason: reason,
            origin: [
                (HeaderName.originTopic, message.topic), (HeaderName.originPartition, String(message.partition)),
                (HeaderName.originOffset, String(message.offset)),
            ], headerPrefix: headerPrefix)
    }

    /// The names, after the prefix, of the headers a dead-lettering adds to the original's own.
    package enum HeaderName {
        package static let error = "error"
        package static let originTopic = "origin-topic"
        package static let originPartition = "origin-partition"
        package static let originOffset = "origin-offset"
        /// On a copy cut to fit, with `original-size` and `original-sha256`.
        package static let truncated = "truncated"
        /// Those of a whole copy: without them, it is the original as it was.
        package static let describingWhole: Set<String> = [error, originTopic, originPartition, originOffset]
    }

    /// How a dead letter was produced.
    package enum Copy: String, Sendable {
        case whole, truncated, summary
    }

    /// What a record takes beyond its key, value and headers (framing, the record batch),
    /// with room to spare: librdkafka refuses locally a record whose key, value and
    /// serialized headers with their overhead exceed `message.max.bytes`.
    static let recordOverheadBytes = 1024
    /// What each header takes beyond its key and value (their lengths as varints).
    static let headerOverheadBytes = 16
    /// A reason is cut to this many bytes: it says why, it does not carry data.
    static let maximumReasonBytes = 4096

    /// The whole record when it fits in `maximumBytes`, else the record cut to fit.
    package func record(fittingIn maximumBytes: Int) -> KafkaRecord {
        let whole = KafkaRecord(topic: topic, key: key, value: value, headers: headers + describingHeaders())
        if Self.size(of: whole) <= maximumBytes { return whole }
        return truncated(fittingIn: maximumBytes)
    }

    /// The record cut to fit: the key and the original's headers kept while they take at
    /// most a quarter of the room each, and as much of the value as the rest allows.
    func truncated(fittingIn maximumBytes: Int) -> KafkaRecord {
        let room = max(0, maximumBytes - Self.recordOverheadBytes)
        var facts =
            describingHeaders() + [
                header(HeaderName.truncated, "true"), header("original-size", String(value.count)),
                header("original-sha256", Self.sha256Hex(value)),
            ]
        var key = self.key
        if let original = key, original.count > room / 4 {
            key = Array(original.prefix(room / 4))
            facts.append(header("original-key-size", String(original.count)))
        }
        var kept = headers
        if Self.size(of: headers) > room / 4 {
            kept = []
            facts.append(header("original-headers-dropped", String(headers.count)))
        }
        let used = (key?.count ?? 0) + Self.size(of: kept) + Self.size(of: facts)
        let valueRoom = max(0, room - used)
        return KafkaRecord(topic: topic, key: key, value: Array(value.prefix(valueRoom)), headers: kept + facts)
    }

    /// The dead letter without any of the original's bytes: why, where from, and the
    /// original value's size and digest.
    package func summary() -> KafkaRecord {
        KafkaRecord(
            topic: topic, key: nil, value: [],
            headers: describingHeaders() + [
                header(HeaderName.truncated, "true"), header("original-size", String(value.count)),
                header("original-sha256", Self.sha256Hex(value)),
            ])
    }

    /// `<prefix>error` and the origin headers.
    private func describingHeaders() -> [KafkaHeader] {
        var reasonBytes = Array(reason.utf8)
        if reasonBytes.count > Self.maximumReasonBytes {
            reasonBytes = Array(reasonBytes.prefix(Self.maximumReasonBytes))
        }
        return [KafkaHeader(key: headerPrefix + HeaderName.error, value: reasonBytes)]
            + origin.map { header($0.name, $0.value) }
    }

    private func header(_ name: String, _ value: String) -> KafkaHeader {
        KafkaHeader(key: headerPrefix + name, value: Array(value.utf8))
    }

    /// What a record takes on the wire, overhead included, as librdkafka judges it.
    static func size(of record: KafkaRecord) -> Int {
        (record.key?.count ?? 0) + record.value.count + size(of: record.headers) + recordOverheadBytes
    }

    static func size(of headers: [KafkaHeader]) -> Int {
        headers.reduce(0) { $0 + $1.key.utf8.count + ($1.value?.count ?? 0) + headerOverheadBytes }
    }

    /// Lower-case hex SHA-256 of `bytes`.
    package static func sha256Hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(64)
        for byte in SHA256.hash(data: bytes) {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}

/// Even the summary of a dead letter was refused as a record: nothing of it could be
/// produced. The caller records it elsewhere (a log line, a metric) and moves on.
package struct DeadLetterRefused: Error, Sendable, CustomStringConvertible {
    package var refusal: String

    package var description: String { "the dead-letter topic refused even the record's summary: \(refusal)" }
}

extension KafkaProducer {
    /// Produces a dead letter, however large the original: whole when it fits the
    /// producer's `message.max.bytes`, else cut to fit; a copy the broker refuses as a
    /// record (too large for the topic, invalid) is replaced by its summary.
    ///
    /// Throws what passes with time (the broker away: retry later), and
    /// ``DeadLetterRefused`` when even the summary is refused as a record (retrying
    /// cannot help).
    @discardableResult
    package func sendDeadLetter(_ letter: DeadLetter) async throws -> DeadLetter.Copy {
        let record = letter.record(fittingIn: maximumMessageBytes)
        let copy: DeadLetter.Copy =
            record.headers.contains { $0.key == letter.headerPrefix + DeadLetter.HeaderName.truncated } ? .truncated : .whole
        do {
            _ = try await send(record)
            return copy
        } catch let error where Self.isAboutTheRecord(error) {
            do {
                _ = try await send(letter.summary())
                return .summary
            } catch let refused where Self.isAboutTheRecord(refused) {
                throw DeadLetterRefused(refusal: "\(refused)")
            }
        }
    }

    private static func isAboutTheRecord(_ error: any Error) -> Bool {
        if case .poison = FailureClassifier.classify(error) { return error is KafkaError }
        return false
    }
}
