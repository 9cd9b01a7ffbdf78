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
}
