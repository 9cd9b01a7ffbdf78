import BatchProcessing
import Kafka
import Testing

/// A dead letter is produced whole when it fits the producer's limit, else cut to fit
/// with what tells the original apart.
@Suite struct DeadLetterShapeTests {
    static func letter(value: [UInt8], headers: [KafkaHeader] = []) -> DeadLetter {
        DeadLetter(
            of: KafkaConsumerMessage(
                topic: "fixes", partition: 2, offset: 41, key: Array("device".utf8), value: value, headers: headers),
            topic: "fixes.dlq", reason: "is not valid JSON", headerPrefix: "checkin-")
    }

    static func texts(_ record: KafkaRecord) -> [String: String] {
        Dictionary(record.headers.map { ($0.key, String(decoding: $0.value ?? [], as: UTF8.self)) }) { $1 }
    }

    @Test func smallRecordIsCopiedWhole() {
        let record = Self.letter(value: Array("nope".utf8), headers: [KafkaHeader(key: "trace", value: [1])])
            .record(fittingIn: 1_000_000)
        #expect(record.value == Array("nope".utf8))
        #expect(record.key == Array("device".utf8))
        let headers = Self.texts(record)
        #expect(headers["trace"] == "\u{1}")
        #expect(headers["checkin-error"] == "is not valid JSON")
        #expect(headers["checkin-origin-offset"] == "41")
        #expect(headers["checkin-truncated"] == nil)
    }

    @Test func recordLargerThanTheLimitIsCutToFitWithItsSizeAndDigest() {
        let value = [UInt8](repeating: UInt8(ascii: "x"), count: 999_950)
        let letter = Self.letter(value: value, headers: [KafkaHeader(key: "big", value: [UInt8](repeating: 0, count: 400_000))])
        let record = letter.record(fittingIn: 1_000_000)
        let headers = Self.texts(record)
        let size =
            (record.key?.count ?? 0) + record.value.count
            + record.headers.reduce(0) { $0 + $1.key.utf8.count + ($1.value?.count ?? 0) + 16 }
        #expect(size < 1_000_000 - 512)
        #expect(record.value.count > 900_000)
        #expect(headers["checkin-truncated"] == "true")
        #expect(headers["checkin-original-size"] == "999950")
        #expect(headers["checkin-original-sha256"] == DeadLetter.sha256Hex(value))
        #expect(headers["checkin-original-headers-dropped"] == "1")
        #expect(headers["big"] == nil)
        #expect(headers["checkin-origin-partition"] == "2")
    }

    @Test func summaryCarriesNoneOfTheOriginal() {
        let value = Array("not json".utf8)
        let summary = Self.letter(value: value).summary()
        #expect(summary.value.isEmpty)
        #expect(summary.key == nil)
        #expect(Self.texts(summary)["checkin-original-size"] == "8")
        #expect(Self.texts(summary)["checkin-original-sha256"] == DeadLetter.sha256Hex(value))
        #expect(Self.texts(summary)["checkin-origin-offset"] == "41")
        #expect(DeadLetter.sha256Hex([]) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(DeadLetter.sha256Hex(Array("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }
}
