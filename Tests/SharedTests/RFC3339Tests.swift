import Foundation
import Shared
import Testing

@Suite struct RFC3339Tests {
    @Test(arguments: [
        ("1970-01-01T00:00:00Z", 0.0),
        ("2026-11-22T10:00:00Z", 1_795_341_600.0),
        ("2026-11-22T10:00:00.250Z", 1_795_341_600.25),
        ("2026-11-22T11:30:00+01:30", 1_795_341_600.0),
        ("2026-11-22T05:00:00-05:00", 1_795_341_600.0),
        ("2024-02-29T23:59:59z", 1_709_251_199.0),
    ])
    func parsesTimestamps(text: String, seconds: Double) throws {
        let date = try #require(RFC3339.parse(text))
        #expect(abs(date.timeIntervalSince1970 - seconds) < 0.0001)
    }

    @Test(arguments: [
        "", "2026-11-22", "2026-11-22T10:00:00", "2026-13-01T00:00:00Z", "2026-02-30T00:00:00Z",
        "2023-02-29T00:00:00Z", "2026-11-22T24:00:00Z", "2026-11-22T10:00:00.Z", "2026-11-22T10:00:00+0100",
        "2026-11-22T10:00:00Zjunk",
    ])
    func rejectsMalformedTimestamps(text: String) {
        #expect(RFC3339.parse(text) == nil)
    }

    @Test func formatsAsUTCWithMilliseconds() {
        #expect(RFC3339.format(Date(timeIntervalSince1970: 1_795_341_600.25)) == "2026-11-22T10:00:00.250Z")
        #expect(RFC3339.format(Date(timeIntervalSince1970: -1)) == "1969-12-31T23:59:59.000Z")
    }

    @Test func roundTripsThroughFormat() throws {
        for seconds in stride(from: -1e9, through: 4e9, by: 123_456_789.125) {
            let date = Date(timeIntervalSince1970: seconds)
            let parsed = try #require(RFC3339.parse(RFC3339.format(date)))
            #expect(abs(parsed.timeIntervalSince1970 - seconds) < 0.001)
        }
    }

    /// Years 0 to 9999 are written digit by digit; others take `format`'s own spelling.
    @Test(arguments: [0, -0.0005, -1, 1_795_341_600.25, 253_402_300_799.999, 253_402_300_800, -62_167_219_200, -62_167_219_200.5])
    func appendsTheBytesOfFormat(seconds: Double) {
        let date = Date(timeIntervalSince1970: seconds)
        var bytes = Array("x".utf8)
        RFC3339.append(date, to: &bytes)
        #expect(bytes == Array(("x" + RFC3339.format(date)).utf8))
    }

    /// Every millisecond of a second, at dates of different magnitudes, comes back as the
    /// text gave it: a binary `Date` just below `.123` is still `.123`, not `.122`.
    @Test(arguments: [
        "1970-01-01T00:00:07", "2001-01-01T00:00:00", "2026-11-22T10:00:00", "2026-11-25T11:14:37", "2004-03-10T00:03:41",
        "2038-03-12T00:33:35", "2999-12-31T23:59:59",
    ])
    func keepsTheMillisecondTheTextGave(second: String) throws {
        var lost: [String] = []
        for millisecond in 0..<1000 {
            let text = second + "." + String(format: "%03d", millisecond) + "Z"
            let date = try #require(RFC3339.parse(text))
            var bytes: [UInt8] = []
            RFC3339.append(date, to: &bytes)
            if RFC3339.format(date) != text || String(decoding: bytes, as: UTF8.self) != text { lost.append(text) }
        }
        #expect(lost.isEmpty, "\(lost.count) of 1000 milliseconds changed, e.g. \(lost.prefix(3))")
    }

    /// A `Date` made from whole milliseconds (as a client's clock or a decoder gives them)
    /// is written with that millisecond, though its binary value may lie just below it.
    @Test func datesOfWholeMillisecondsKeepThem() {
        var lost: [String] = []
        for second in stride(from: 1_795_341_600, to: 1_795_341_600 + 86_400, by: 3_607) {
            for millisecond in 0..<1000 {
                let date = Date(timeIntervalSince1970: Double(second) + Double(millisecond) / 1000)
                let text = RFC3339.format(date)
                if !text.hasSuffix("." + String(format: "%03d", millisecond) + "Z") { lost.append(text) }
            }
        }
        #expect(lost.isEmpty, "\(lost.count) of 24000 lost their millisecond, e.g. \(lost.prefix(3))")
    }

    /// Digits past the millisecond are cut, as before, not rounded up into the next one.
    @Test func cutsBelowTheMillisecond() throws {
        #expect(RFC3339.format(try #require(RFC3339.parse("2026-11-22T10:00:00.1239Z"))) == "2026-11-22T10:00:00.123Z")
        #expect(RFC3339.format(try #require(RFC3339.parse("2026-11-22T10:00:00.9999Z"))) == "2026-11-22T10:00:00.999Z")
        #expect(RFC3339.format(Date(timeIntervalSince1970: -0.0005)) == "1969-12-31T23:59:59.999Z")
    }
}
