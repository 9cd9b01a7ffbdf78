import Foundation
import Shared
import Testing

/// The writer must give the bytes `WireJSON.encoder()` gives: consumers compare events by
/// their bytes, and a webhook's signature covers them.
@Suite struct JSONWriterTests {
    func encoded(_ value: some Encodable) throws -> String {
        String(decoding: try WireJSON.encoder().encode(value), as: UTF8.self)
    }

    func written(_ write: (inout JSONWriter) throws -> Void) rethrows -> String {
        var json = JSONWriter()
        try write(&json)
        return String(decoding: json.bytes, as: UTF8.self)
    }

    @Test(arguments: [
        (8.0, "8"), (-0.0, "-0"), (0.1, "0.1"), (1e-4, "0.0001"), (1e-5, "1e-05"), (1e15, "1000000000000000"),
        (9_007_199_254_740_992, "9007199254740992"), (1e16, "1e+16"), (-122.419_415_500_000_01, "-122.41941550000001"),
        (.leastNonzeroMagnitude, "5e-324"), (1.797_693_134_862_315_7e308, "1.7976931348623157e+308"),
    ])
    func doublesAsTheEncoderWritesThem(value: Double, text: String) throws {
        #expect(try written { try $0.number(value) } == text)
        #expect(try encoded([value]) == "[\(text)]")
    }

    @Test(arguments: [Double.nan, .infinity, -.infinity])
    func nonFiniteDoublesThrowAsTheEncoderDoes(value: Double) {
        #expect(throws: EncodingError.self) { try WireJSON.encoder().encode([value]) }
        #expect(throws: EncodingError.self) { try written { try $0.number(value) } }
    }

    @Test func stringsEscapeQuotesBackslashesAndControlCharactersOnly() throws {
        let text = "a\u{0}\u{8}\u{9}\u{A}\u{B}\u{C}\u{D}\u{1F}\u{7F}\"\\/\u{2028}é😀"
        let expected = #""a\u0000\b\t\n\u000b\f\r\u001f"# + "\u{7F}" + #"\"\\/"# + "\u{2028}é😀\""
        #expect(written { $0.string(text) } == expected)
        #expect(try encoded([text]) == "[\(expected)]")
    }

    /// By UTF-8 bytes: upper case before lower, digits before both, a prefix before what it
    /// prefixes, a decomposed "é" (an "e" and a combining accent) before a composed one,
    /// and U+FFFF before an emoji (UTF-16 order would have them the other way round).
    @Test func customDataKeysSortByTheirUTF8Bytes() throws {
        let data = ["b": "", "a": "", "B": "", "ab": "", "10": "", "9": "", "é": "", "e\u{301}x": "", "😀": "", "\u{FFFF}": "", "": ""]
        let expected =
            "{\"\":\"\",\"10\":\"\",\"9\":\"\",\"B\":\"\",\"a\":\"\",\"ab\":\"\",\"b\":\"\",\"e\u{301}x\":\"\",\"é\":\"\",\"\u{FFFF}\":\"\",\"😀\":\"\"}"
        #expect(written { $0.object(data) } == expected)
        #expect(try encoded(data) == expected)
    }

    @Test func integersIncludingTheExtremes() throws {
        let values = [0, 7, -7, 10, 1_000_000, Int.max, Int.min]
        let text = written { json in
            json.beginArray()
            for value in values { json.number(value) }
            json.endArray()
        }
        #expect(text == (try encoded(values)))
    }

    @Test func typicalEventAndFix() throws {
        let event = WireJSONSamples.typicalEvent(3)
        #expect(try event.wireJSON() == Array(try WireJSON.encoder().encode(event)))
        let fix = Fix(projectId: "p", deviceId: "d", timestamp: Date(timeIntervalSince1970: 1_795_341_900.5), lat: -37.81, lon: 144.96)
        let expected = #"{"deviceId":"d","lat":-37.81,"lon":144.96,"mode":"normal","projectId":"p","timestamp":"2026-11-22T10:05:00.500Z"}"#
        #expect(try fix.wireJSON() == Array(expected.utf8))
        #expect(try fix.wireJSON() == Array(try WireJSON.encoder().encode(fix)))
    }

    /// Random events, fixes and webhook payloads from a fixed seed and from a fresh one:
    /// the fixed seed repeats what passed before, the fresh one looks somewhere new. A
    /// failure names its seed; `WIRE_JSON_SEED` replays it.
    @Test func randomValuesMatchTheEncoderByteForByte() throws {
        var seeds: [UInt64] = [0x5EED_C0DE, UInt64.random(in: 0...UInt64.max)]
        if let replay = ProcessInfo.processInfo.environment["WIRE_JSON_SEED"].flatMap({ UInt64($0) }) { seeds = [replay] }
        let encoder = WireJSON.encoder()
        for seed in seeds {
            var samples = WireJSONSamples(seed: seed)
            for index in 0..<2000 {
                let event = samples.event()
                guard try same(event, encoder: encoder, seed: seed, index: index) else { return }
                guard try same(WebhookPayload(event: event), encoder: encoder, seed: seed, index: index) else { return }
                guard try same(samples.fix(), encoder: encoder, seed: seed, index: index) else { return }
            }
        }
    }

    func same<Value: Encodable & WireJSONWritable>(_ value: Value, encoder: JSONEncoder, seed: UInt64, index: Int) throws -> Bool {
        let expected = Array(try encoder.encode(value))
        let actual = try value.wireJSON()
        guard actual != expected else { return true }
        let at = zip(actual, expected).prefix { $0 == $1 }.count
        Issue.record(
            """
            seed \(seed), sample \(index) (\(Value.self)) differs from byte \(at):
            encoder: \(String(decoding: expected, as: UTF8.self))
            writer:  \(String(decoding: actual, as: UTF8.self))
            value:   \(value)
            """)
        return false
    }
}
