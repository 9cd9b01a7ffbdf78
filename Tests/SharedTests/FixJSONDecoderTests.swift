import Foundation
import Shared
import Testing

/// The corners of JSON where `FixJSONDecoder` follows `JSONSerialization` on Linux,
/// each also checked against `FixValidator` so the examples cannot drift from it.
@Suite struct FixJSONDecoderTests {
    static let receivedAt = FixJSONGenerator.receivedAt
    static let required = #""projectId":"p","deviceId":"d","timestamp":"2026-11-22T10:00:00Z""#
    static let notJSON = InvalidFix([FieldProblem(field: "$", problem: "is not valid JSON")])

    /// Skips members the fix format does not have, as `CHECKIN_FIXES_IGNORE_UNKNOWN_MEMBERS=true` does.
    static let lenient = InputLimits(ignoresUnknownFixMembers: true)

    /// Decodes `bytes` and records an issue when `FixValidator` decides otherwise.
    func decode(_ bytes: [UInt8], limits: InputLimits = InputLimits(), sourceLocation: SourceLocation = #_sourceLocation)
        -> Result<Fix, InvalidFix>
    {
        let decoded = FixJSONDecoder.decode(bytes, receivedAt: Self.receivedAt, limits: limits)
        let expected = FixValidator.validate(json: Data(bytes), receivedAt: Self.receivedAt, limits: limits)
        #expect(FixComparison.same(decoded, expected), "validator: \(expected)", sourceLocation: sourceLocation)
        return decoded
    }

    func decode(_ json: String, limits: InputLimits = InputLimits(), sourceLocation: SourceLocation = #_sourceLocation)
        -> Result<Fix, InvalidFix>
    {
        decode(Array(json.utf8), limits: limits, sourceLocation: sourceLocation)
    }

    /// A fix with the required members and `members` after them.
    func fix(_ members: String, limits: InputLimits = InputLimits(), sourceLocation: SourceLocation = #_sourceLocation)
        -> Result<Fix, InvalidFix>
    {
        decode("{\(Self.required),\(members)}", limits: limits, sourceLocation: sourceLocation)
    }

    @Test func decodesACompleteFix() throws {
        let fix = try decode(
            """
            {"projectId":"p","deviceId":"d","timestamp":"2026-11-22T10:00:00.5+01:00","lat":-37.81,"lon":144.96,
             "accuracy":8,"speed":1.5,"bearing":360,"altitude":12,"source":"gps","mode":"restart","fixId":"f1",
             "beacons":[{"uuid":"f7826da6-4fa2-4e98-8024-bc5b71e0893e","major":1.0,"minor":2,"rssi":-70},
                        {"eddystoneId":"ABC","rssi":-1e1}]}
            """
        ).get()
        #expect(fix.timestamp == Date(timeIntervalSince1970: 1_795_338_000.5))
        #expect(fix.lat == -37.81 && fix.lon == 144.96 && fix.bearing == 0 && fix.mode == .restart)
        #expect(
            fix.beacons == [
                BeaconSighting(uuid: "F7826DA6-4FA2-4E98-8024-BC5B71E0893E", major: 1, minor: 2, rssi: -70),
                BeaconSighting(eddystoneId: "abc", rssi: -10),
            ])
    }

    @Test func namesProblemsInTheValidatorsOrder() {
        let result = decode(#"{"mode":"sleepy","lon":"east","lat":91,"deviceId":"","beacons":[{"rssi":true},5]}"#)
        #expect(
            result
                == .failure(
                    InvalidFix([
                        FieldProblem(field: "projectId", problem: "is required"),
                        FieldProblem(field: "deviceId", problem: "must be a non-empty string"),
                        FieldProblem(field: "timestamp", problem: "is required"),
                        FieldProblem(field: "lat", problem: "must be between -90 and 90"),
                        FieldProblem(field: "lon", problem: "must be a finite number"),
                        FieldProblem(field: "mode", problem: "must be one of: normal, restart"),
                        FieldProblem(field: "beacons[0].rssi", problem: "must be an integer in -200...20"),
                        FieldProblem(field: "beacons[0].uuid", problem: "a beacon needs a uuid or an eddystoneId"),
                        FieldProblem(field: "beacons[1]", problem: "must be a JSON object"),
                    ])))
    }

    /// A beacon identifier of another type than a string is refused, even beside one that is a string.
    @Test func refusesABeaconIdentifierThatIsNotAString() {
        let result = fix(#""lat":0,"lon":0,"beacons":[{"uuid":"u","eddystoneId":{},"rssi":0},{"uuid":7,"rssi":0}]"#)
        #expect(
            result
                == .failure(
                    InvalidFix([
                        FieldProblem(field: "beacons[0].eddystoneId", problem: "must be a string"),
                        FieldProblem(field: "beacons[1].uuid", problem: "must be a string"),
                        FieldProblem(field: "beacons[1].uuid", problem: "a beacon needs a uuid or an eddystoneId"),
                    ])))
    }

    /// `JSONSerialization` allows one trailing comma in arrays and objects; RFC 8259 does not,
    /// whether unknown members are skipped or not.
    @Test func refusesTrailingCommas() throws {
        for limits in [InputLimits(), Self.lenient] {
            #expect(fix(#""lat":0,"lon":0,"beacons":[{"uuid":"u","rssi":-1,}]"#, limits: limits) == .failure(Self.notJSON))
            #expect(fix(#""lat":0,"lon":0,"beacons":[{"uuid":"u","rssi":-1}],"#, limits: limits) == .failure(Self.notJSON))
            #expect(fix(#""lat":0,"lon":0,"beacons":[{"uuid":"u","rssi":-1},]"#, limits: limits) == .failure(Self.notJSON))
            #expect(fix(#""lat":0,"lon":0,,"#, limits: limits) == .failure(Self.notJSON))
            #expect(decode("[,]", limits: limits) == .failure(Self.notJSON))
        }
        #expect(try fix(#""lat":0,"lon":0,"beacons":[{"uuid":"u","rssi":-1}]"#).get().beacons.count == 1)
    }

    /// Every member the format does not have is named, each once, sorted, before the fix's
    /// other problems; a beacon sighting's likewise, among the fix's problems where its others are.
    @Test func namesEveryUnknownMember() throws {
        let result = fix(
            #""lat":91,"lon":0,"accuarcy":5,"note":{},"note":1,"beacons":[{"uuid":"u","rssi":-1,"txPower":-59}],"Lat":0"#)
        #expect(
            result
                == .failure(
                    InvalidFix([
                        FieldProblem(field: "Lat", problem: "is not a member of a fix"),
                        FieldProblem(field: "accuarcy", problem: "is not a member of a fix"),
                        FieldProblem(field: "note", problem: "is not a member of a fix"),
                        FieldProblem(field: "lat", problem: "must be between -90 and 90"),
                        FieldProblem(field: "beacons[0].txPower", problem: "is not a member of a beacon sighting"),
                    ])))
        // Named as `JSONSerialization` reads the key: escapes undone, a leading byte-order mark dropped.
        #expect(
            fix(#""lat":0,"lon":0,"note":1"#)
                == .failure(InvalidFix([FieldProblem(field: "note", problem: "is not a member of a fix")])))
        #expect(try fix("\"lat\":0,\"\u{FEFF}lon\":0").get().lon == 0)
    }

    /// With `ignoresUnknownFixMembers` they are checked as JSON and skipped, as before.
    @Test func skipsUnknownMembersWhenTold() throws {
        let fix = try fix(
            #""lat":1,"lon":0,"accuarcy":5,"note":{"a":[1]},"beacons":[{"uuid":"u","rssi":-1,"txPower":-59}]"#,
            limits: Self.lenient
        ).get()
        #expect(fix.lat == 1 && fix.accuracy == nil && fix.beacons.count == 1)
    }

    /// A repeated member's last value counts, as in a dictionary.
    @Test func takesTheLastOfRepeatedMembers() throws {
        #expect(try fix(#""lat":"north","lon":0,"lat":1"#).get().lat == 1)
        #expect(
            fix(#""lat":1,"lon":0,"lat":true"#) == .failure(InvalidFix([FieldProblem(field: "lat", problem: "must be a finite number")])))
        #expect(try fix(#""lat":0,"l\u006fn":5,"lon":6"#).get().lon == 6)
    }

    /// An integer's minus sign is lost (it is read as an Int64); a number of more than 17
    /// characters goes through `Decimal` and lands where `JSONSerialization` puts it,
    /// not on the correctly rounded double.
    @Test func readsNumbersAsJSONSerializationDoes() throws {
        #expect(try fix(#""lat":-0,"lon":-0.0"#).get().lat.bitPattern == 0)
        #expect(try fix(#""lat":-0,"lon":-0.0"#).get().lon.bitPattern == (-0.0).bitPattern)
        let long = try fix(#""lat":1.00000000000000011102230246251565404236316680908203125,"lon":0"#).get()
        #expect(long.lat.bitPattern == 0x3FF0_0000_0000_0002)
        #expect(try fix(#""lat":1E1,"lon":-1e-400,"altitude":123456789012345678901234567890"#).get().lat == 10)
        for malformed in ["01", "1.", ".5", "+1", "1e", "1e+", "-", "0x10", "NaN", "1 2"] {
            #expect(fix(#""lat":\#(malformed),"lon":0"#) == .failure(Self.notJSON), "\(malformed)")
        }
    }

    /// `JSONSerialization` converts numbers after parsing: one it cannot hold fails the
    /// document, even in a member nobody reads, unless a later member replaces it.
    @Test func refusesUnrepresentableNumbersThatSurvive() throws {
        #expect(fix(#""lat":0,"lon":0,"extra":[1e400]"#) == .failure(Self.notJSON))
        #expect(fix(#""lat":0,"lon":0,"altitude":1e400"#) == .failure(Self.notJSON))
        #expect(try fix(#""lat":0,"lon":0,"extra":{"a":1e400},"extra":1"#, limits: Self.lenient).get().lat == 0)
        #expect(try fix(#""lat":1e400,"lon":0,"lat":2"#).get().lat == 2)
    }

    @Test func nestsAtMost512Deep() throws {
        // The fix object is the first level.
        func nested(_ levels: Int) -> String { String(repeating: "[", count: levels) + String(repeating: "]", count: levels) }
        #expect(try fix(#""lat":0,"lon":0,"extra":\#(nested(511))"#, limits: Self.lenient).get().lat == 0)
        #expect(fix(#""lat":0,"lon":0,"extra":\#(nested(512))"#) == .failure(Self.notJSON))
    }

    @Test func acceptsWhitespaceAndAByteOrderMarkAroundTheFix() throws {
        let fix = "{\(Self.required),\"lat\":0,\"lon\":0}"
        #expect(throws: Never.self) { try decode(" \t\r\n\(fix) \n").get() }
        #expect(throws: Never.self) { try decode([0xEF, 0xBB, 0xBF] + Array(fix.utf8)).get() }
        #expect(decode("\(fix) x") == .failure(Self.notJSON))
        #expect(decode("\u{0C}\(fix)") == .failure(Self.notJSON))
        #expect(decode("\(fix)\u{0}") == .failure(Self.notJSON))
    }

    /// JSONSerialization detects UTF-16 and UTF-32 by a byte-order mark or NUL bytes.
    @Test func readsUTF16Documents() throws {
        let fix = "{\(Self.required),\"lat\":0,\"lon\":0,\"fixId\":\"😀\"}"
        let utf16 = fix.utf16.flatMap { [UInt8(truncatingIfNeeded: $0), UInt8($0 >> 8)] }
        #expect(try decode(utf16).get().fixId == "😀")
        #expect(try decode([0xFE, 0xFF] + fix.utf16.flatMap { [UInt8($0 >> 8), UInt8(truncatingIfNeeded: $0)] }).get().fixId == "😀")
    }

    @Test func refusesWhatIsNotAnObject() {
        #expect(decode("[1,2]") == .failure(InvalidFix([FieldProblem(field: "$", problem: "must be a JSON object")])))
        // JSONSerialization takes no bare values at the top.
        for fragment in ["\"fix\"", "1", "null", "true", "", "  "] {
            #expect(decode(fragment) == .failure(Self.notJSON), "\(fragment)")
        }
    }

    @Test func decodesEscapesAndRefusesBrokenStrings() throws {
        #expect(try fix(#""lat":0,"lon":0,"fixId":"\u00e9\uD83D\uDE00\/\"""#).get().fixId == "é😀/\"")
        #expect(fix(#""lat":0,"lon":0,"fixId":"\uD83D""#) == .failure(Self.notJSON))
        #expect(fix(#""lat":0,"lon":0,"fixId":"\uDE00x""#) == .failure(Self.notJSON))
        #expect(fix(#""lat":0,"lon":0,"fixId":"\x""#) == .failure(Self.notJSON))
        #expect(fix("\"lat\":0,\"lon\":0,\"fixId\":\"a\tb\"") == .failure(Self.notJSON))
        let badUTF8 = Array("{\(Self.required),\"lat\":0,\"lon\":0,\"fixId\":\"".utf8) + [0xC0, 0x80] + Array("\"}".utf8)
        #expect(decode(badUTF8) == .failure(Self.notJSON))
        // DEL may stand in a JSON string but not in an id.
        #expect(
            fix("\"lat\":0,\"lon\":0,\"fixId\":\"\u{7F}\"")
                == .failure(
                    InvalidFix([
                        FieldProblem(field: "fixId", problem: "must not contain control characters (U+0000-U+001F, U+007F-U+009F)")
                    ])))
    }

    /// `JSONSerialization` drops a byte-order mark that starts a string or follows an
    /// escape in it; an escaped one stays.
    @Test func dropsAByteOrderMarkStartingAString() throws {
        #expect(try fix("\"lat\":0,\"lon\":0,\"fixId\":\"\u{FEFF}f\"").get().fixId == "f")
        #expect(try fix("\"lat\":0,\"lon\":0,\"fixId\":\"f\\/\u{FEFF}g\u{FEFF}\"").get().fixId == "f/g\u{FEFF}")
        #expect(try fix(#""lat":0,"lon":0,"fixId":"\uFEFFf""#).get().fixId == "\u{FEFF}f")
        #expect(try decode("{\"\u{FEFF}lat\":0,\(Self.required),\"lon\":0}").get().lat == 0)
    }
}

@Suite struct FixJSONBatchDecoderTests {
    static let receivedAt = FixJSONGenerator.receivedAt
    static let fix = #"{"deviceId":"d","timestamp":"2026-11-22T10:00:00Z","lat":0,"lon":0"#

    /// Decodes `body` and records an issue when the decoding Ingest did before decides otherwise.
    func decode(
        _ body: String, projectId: String? = "p", maximumCount: Int = 10, limits: InputLimits = InputLimits(),
        sourceLocation: SourceLocation = #_sourceLocation
    ) -> FixJSONDecoder.Batch {
        let bytes = Array(body.utf8)
        let decoded = FixJSONDecoder.decodeBatch(
            bytes, defaultProjectId: projectId, maximumCount: maximumCount, receivedAt: Self.receivedAt, limits: limits)
        let expected = ReferenceBatchDecoder.decode(
            bytes, projectId: projectId, maximumCount: maximumCount, receivedAt: Self.receivedAt, limits: limits)
        #expect(decoded == expected, sourceLocation: sourceLocation)
        return decoded
    }

    /// An unknown member of one fix and an out-of-range latitude of another are named in one
    /// answer, with the envelope's own unknown member first.
    @Test func namesUnknownMembersWithEveryOtherProblem() {
        let body = #"{"sentAt":1,"fixes":[\#(Self.fix)},\#(Self.fix),"lat":91},\#(Self.fix)},\#(Self.fix),"accuarcy":5}]}"#
        #expect(
            decode(body)
                == .invalid([
                    FieldProblem(field: "sentAt", problem: "is not a member of a batch"),
                    FieldProblem(field: "fixes[1].lat", problem: "must be between -90 and 90"),
                    FieldProblem(field: "fixes[3].accuarcy", problem: "is not a member of a fix"),
                ]))
        // A fix of another project is named for that and for its unknown members.
        #expect(
            decode(#"[\#(Self.fix),"projectId":"q","note":1}]"#)
                == .invalid([
                    FieldProblem(field: "fixes[0].note", problem: "is not a member of a fix"),
                    FieldProblem(field: "fixes[0].projectId", problem: "must be the API key's project"),
                ]))
        let inRange = body.replacingOccurrences(of: #""lat":91"#, with: #""lat":9"#)
        guard case .fixes(let fixes) = decode(inRange, limits: FixJSONDecoderTests.lenient) else {
            Issue.record("expected fixes when unknown members are skipped")
            return
        }
        #expect(fixes.count == 4 && fixes[3].accuracy == nil)
    }

    @Test func refusesTrailingCommasAsNotJSON() {
        for limits in [InputLimits(), FixJSONDecoderTests.lenient] {
            #expect(decode(#"{"fixes":[\#(Self.fix),},]}"#, limits: limits) == .notJSON)
            #expect(decode(#"{"fixes":[\#(Self.fix)},]}"#, limits: limits) == .notJSON)
            #expect(decode(#"{"fixes":[\#(Self.fix)}],}"#, limits: limits) == .notJSON)
        }
    }

    @Test func takesTheAPIKeysProjectForFixesWithoutOne() {
        guard case .fixes(let fixes) = decode(#"{"fixes":[\#(Self.fix)}, \#(Self.fix),"projectId":null}]}"#) else {
            Issue.record("expected fixes")
            return
        }
        #expect(fixes.map(\.projectId) == ["p", "p"])
    }

    @Test func refusesFixesOfAnotherProjectBeforeTheirOtherProblems() {
        let body = #"[\#(Self.fix),"projectId":"q","lat":91}, \#(Self.fix),"projectId":5}, {"lat":0}, 7]"#
        #expect(
            decode(body)
                == .invalid([
                    FieldProblem(field: "fixes[0].projectId", problem: "must be the API key's project"),
                    FieldProblem(field: "fixes[1].projectId", problem: "must be the API key's project"),
                    FieldProblem(field: "fixes[2].deviceId", problem: "is required"),
                    FieldProblem(field: "fixes[2].timestamp", problem: "is required"),
                    FieldProblem(field: "fixes[2].lon", problem: "is required"),
                    FieldProblem(field: "fixes[3]", problem: "must be a JSON object"),
                ]))
    }

    /// Project ids compare as `String`s do: the same text in other scalars is the same project.
    @Test func comparesProjectsAsStrings() {
        guard case .fixes(let fixes) = decode(#"[\#(Self.fix),"projectId":"e\u0301"}]"#, projectId: "\u{E9}") else {
            Issue.record("expected fixes")
            return
        }
        #expect(fixes.first?.projectId.unicodeScalars.count == 2)
    }

    @Test func judgesTheBatchBeforeItsFixes() {
        #expect(decode(#"{"fixes":[1,2,3]}"#, maximumCount: 2) == .tooLarge(count: 3))
        #expect(decode(#"{"fixes":[]}"#) == .empty)
        #expect(decode(#"{"fixes":{}}"#) == .notABatch)
        #expect(decode(#"{"items":[]}"#) == .notABatch)
        #expect(decode(#"{"fixes":[\#(Self.fix)}],"fixes":null}"#) == .notABatch)
        #expect(decode(#"{"fixes":[1],"fixes":[]}"#) == .empty)
        #expect(decode(#""fixes""#) == .notJSON)
        #expect(decode(#"{"fixes":[\#(Self.fix)}],"extra":1e400}"#) == .notJSON)
        #expect(decode(#"{"fixes":[\#(Self.fix)}]"#) == .notJSON)
    }
}
