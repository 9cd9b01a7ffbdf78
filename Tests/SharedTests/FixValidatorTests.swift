import Foundation
import Shared
import Testing

@Suite struct FixValidatorTests {
    /// When the fixes of these tests count as received: 2026-11-22T10:05:00Z.
    static let receivedAt = Date(timeIntervalSince1970: 1_795_341_900)

    func validate(_ json: String) -> Result<Fix, InvalidFix> {
        FixValidator.validate(json: Data(json.utf8), receivedAt: Self.receivedAt)
    }

    @Test func acceptsACompleteFix() throws {
        let fix = try validate(
            """
            {"projectId":"p","deviceId":"d","timestamp":"2026-11-22T10:00:00Z","lat":-37.81,"lon":144.96,
             "accuracy":8,"speed":1.5,"bearing":90,"altitude":12,"source":"gps","mode":"restart","fixId":"f1",
             "beacons":[{"uuid":"f7826da6-4fa2-4e98-8024-bc5b71e0893e","major":1,"minor":2,"rssi":-70}]}
            """
        ).get()
        #expect(fix.projectId == "p")
        #expect(fix.deviceId == "d")
        #expect(fix.lat == -37.81 && fix.lon == 144.96)
        #expect(fix.accuracy == 8 && fix.speed == 1.5 && fix.bearing == 90 && fix.altitude == 12)
        #expect(fix.source == .gps && fix.mode == .restart && fix.fixId == "f1")
        #expect(fix.beacons == [BeaconSighting(uuid: "F7826DA6-4FA2-4E98-8024-BC5B71E0893E", major: 1, minor: 2, rssi: -70)])
    }

    @Test func defaultsModeToNormal() throws {
        let fix = try validate(#"{"projectId":"p","deviceId":"d","timestamp":"2026-11-22T10:00:00Z","lat":0,"lon":0}"#).get()
        #expect(fix.mode == .normal)
        #expect(fix.beacons.isEmpty)
    }

    @Test func namesEveryBadField() {
        let result = validate(
            #"{"deviceId":"","timestamp":"yesterday","lat":91,"lon":"east","accuracy":-1,"mode":"sleepy","bearing":400}"#)
        guard case .failure(let invalid) = result else {
            Issue.record("expected a failure")
            return
        }
        let fields = Set(invalid.problems.map(\.field))
        #expect(fields == ["projectId", "deviceId", "timestamp", "lat", "lon", "accuracy", "mode", "bearing"])
    }

    @Test func prefixesFieldsWithThePath() {
        guard case .failure(let invalid) = FixValidator.validate(["deviceId": "d"], path: "fixes[3]", receivedAt: Self.receivedAt) else {
            Issue.record("expected a failure")
            return
        }
        #expect(invalid.problems.contains(FieldProblem(field: "fixes[3].lat", problem: "is required")))
    }

    @Test func rejectsNonObjectsAndBrokenJSON() {
        guard case .failure(let notJSON) = validate("{"), case .failure(let notObject) = validate("[1,2]") else {
            Issue.record("expected failures")
            return
        }
        #expect(notJSON.problems == [FieldProblem(field: "$", problem: "is not valid JSON")])
        #expect(notObject.problems == [FieldProblem(field: "$", problem: "must be a JSON object")])
    }

    @Test func rejectsBooleansAsNumbers() {
        guard
            case .failure(let invalid) = validate(
                #"{"projectId":"p","deviceId":"d","timestamp":"2026-11-22T10:00:00Z","lat":true,"lon":0}"#)
        else {
            Issue.record("expected a failure")
            return
        }
        #expect(invalid.problems.map(\.field) == ["lat"])
    }

    @Test func encodedFixValidatesBackToTheSameFix() throws {
        let fix = Fix(
            projectId: "p", deviceId: "d", timestamp: Date(timeIntervalSince1970: 1_795_341_600.5), lat: 1.5, lon: -2.25,
            accuracy: 5, speed: 3, bearing: 180, source: .wifi, mode: .restart,
            beacons: [BeaconSighting(eddystoneId: "abc", rssi: -60)], fixId: "x")
        let data = try WireJSON.encoder().encode(fix)
        #expect(try FixValidator.validate(json: data, receivedAt: Self.receivedAt).get() == fix)
        #expect(try WireJSON.decoder().decode(Fix.self, from: data) == fix)
    }

    /// The fields a fix is refused for, or [] when it is accepted.
    func refusedFields(_ fields: [String: Any], receivedAt: Date = FixValidatorTests.receivedAt, limits: InputLimits = InputLimits())
        -> [String]
    {
        var object: [String: Any] = ["projectId": "p", "deviceId": "d", "timestamp": "2026-11-22T10:00:00Z", "lat": 0, "lon": 0]
        object.merge(fields) { _, new in new }
        switch FixValidator.validate(object, receivedAt: receivedAt, limits: limits) {
        case .success: return []
        case .failure(let invalid): return invalid.problems.map(\.field)
        }
    }

    @Test func refusesControlCharactersInIds() {
        #expect(refusedFields(["deviceId": "dev\u{0}ice"]) == ["deviceId"])
        #expect(refusedFields(["projectId": "p\u{85}"]) == ["projectId"])
        #expect(refusedFields(["fixId": "line\nbreak"]) == ["fixId"])
        #expect(refusedFields(["deviceId": "\u{7F}"]) == ["deviceId"])
        #expect(refusedFields(["beacons": [["uuid": "\u{0}", "rssi": -60]]]) == ["beacons[0].uuid"])
        #expect(refusedFields(["deviceId": "device-é-😀"]) == [])
    }

    @Test func idsAreCountedInCharactersUpTo128() {
        #expect(refusedFields(["deviceId": String(repeating: "😀", count: 128)]) == [])
        #expect(refusedFields(["deviceId": String(repeating: "d", count: 129)]) == ["deviceId"])
        #expect(refusedFields(["fixId": String(repeating: "f", count: 129)]) == ["fixId"])
    }

    /// A fix from the far future would make every later fix of its device "late".
    @Test func refusesTimestampsFromTheFarFutureOrBefore2000() {
        #expect(refusedFields(["timestamp": "9999-12-31T23:59:59Z"]) == ["timestamp"])
        #expect(refusedFields(["timestamp": "1999-12-31T23:59:59Z"]) == ["timestamp"])
        #expect(refusedFields(["timestamp": "2000-01-01T00:00:00Z"]) == [])
    }

    @Test func timestampMayBeAheadOfItsReceiptByTheClockSkew() {
        // Received at 10:05:00; the default skew is 300 s.
        #expect(refusedFields(["timestamp": "2026-11-22T10:10:00Z"]) == [])
        #expect(refusedFields(["timestamp": "2026-11-22T10:10:01Z"]) == ["timestamp"])
        #expect(refusedFields(["timestamp": "2026-11-22T10:10:01Z"], limits: InputLimits(maxClockSkew: 600)) == [])
        // The reference is a parameter: the same fix judged against a later receipt passes.
        #expect(refusedFields(["timestamp": "2026-11-22T10:10:01Z"], receivedAt: Self.receivedAt + 1) == [])
    }

    @Test func timestampProblemNamesTheReceiptTime() {
        guard
            case .failure(let invalid) = validate(
                #"{"projectId":"p","deviceId":"d","timestamp":"9999-12-31T00:00:00Z","lat":0,"lon":0}"#)
        else {
            Issue.record("expected a failure")
            return
        }
        #expect(
            invalid.problems == [
                FieldProblem(
                    field: "timestamp", problem: "must be at most 300 s after the fix was received (2026-11-22T10:05:00.000Z)")
            ])
    }
}
