import Foundation
import Shared
import Testing

@testable import Geofence

/// The limits (docs/http-api.md#limits) on zones documents, and what they buy: every event
/// built from the largest zone they allow fits in a Kafka message.
@Suite struct ZoneLimitsTests {
    static let lat = -33.8688
    static let lon = 151.2093

    static func problems(_ zone: ZoneDefinition) -> [String] {
        ZoneValidator.validate(ZonesDocument(zones: [zone])).map(\.problem)
    }

    static var plain: ZoneDefinition { circleZone("z", lat: lat, lon: lon, radius: 100) }

    @Test func twoMegabyteDescriptionIsRefused() {
        var zone = Self.plain
        zone.description = String(repeating: "x", count: 2 << 20)
        #expect(Self.problems(zone) == ["description must be at most 4096 characters"])
        zone.description = String(repeating: "x", count: 4_096)
        #expect(Self.problems(zone).isEmpty)
    }

    @Test func idsAreOneTo128CharactersWithoutControlCharacters() {
        for (id, fine) in [
            ("a\u{0}b", false), ("tab\there", false), ("del\u{7F}", false), ("c1\u{85}", false),
            (String(repeating: "é", count: 128), true), (String(repeating: "i", count: 129), false), ("", false),
        ] {
            var zone = Self.plain
            zone.id = id
            #expect(Self.problems(zone).isEmpty == fine, "zone id \(id.debugDescription)")
            zone = Self.plain
            zone.fences[0].id = id
            #expect(Self.problems(zone).isEmpty == fine, "fence id \(id.debugDescription)")
            zone = Self.plain
            zone.beacons = [BeaconDefinition(id: id, eddystoneId: "abc")]
            #expect(Self.problems(zone).isEmpty == fine, "beacon id \(id.debugDescription)")
        }
    }

    @Test func namesAndCustomDataAreBounded() {
        var zone = Self.plain
        zone.name = String(repeating: "n", count: 257)
        zone.fences[0].name = String(repeating: "n", count: 257)
        zone.fences[0].description = "nul \u{0}"
        zone.customData = ["k": String(repeating: "v", count: 1_025), String(repeating: "k", count: 65): "v"]
        #expect(
            Self.problems(zone) == [
                "name must be at most 256 characters",
                "customData['k'] must be at most 1024 characters",
                "customData key 'kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk' must be at most 64 characters",
                "name must be at most 256 characters",
                "description must not contain control characters other than tab and line breaks",
            ])
        zone = Self.plain
        zone.description = "two\nlines\tand a tab"
        zone.customData = Dictionary(uniqueKeysWithValues: (0..<50).map { ("key\($0)", "value") })
        #expect(Self.problems(zone).isEmpty)
        zone.customData["one too many"] = "value"
        #expect(Self.problems(zone) == ["customData has 51 keys, at most 50 are allowed"])
    }

    /// The largest zone the limits allow, written in the characters that take the most
    /// bytes in JSON, still gives a check-in and a check-out under 1 MB each; a fence
    /// of more than 1,000 positions is left out of its events.
    @Test func largestZoneGivesEventsUnderOneMegabyte() throws {
        let encoder = WireJSON.encoder()
        // Whichever character costs most once encoded: escaped, or 4 bytes of UTF-8.
        let costly = ["\"", "\\", "\n", "\u{2028}", "\u{10FFFF}", "😀", "é"].max { a, b in
            try! encoder.encode(String(repeating: a, count: 64)).count < encoder.encode(String(repeating: b, count: 64)).count
        }!
        func text(_ count: Int, _ distinct: Int = 0) -> String {
            let tag = String(distinct)
            return tag + String(repeating: costly, count: count - tag.count)
        }
        func id(_ distinct: Int) -> String { text(InputLimits.maximumIdentifierLength, distinct).replacingOccurrences(of: "\n", with: "x") }
        let ring = RandomWorld.wobbly(lat: Self.lat, lon: Self.lon, radius: 300, vertices: InputLimits.maximumEventGeometryPositions - 1)
        #expect(ring.count == InputLimits.maximumEventGeometryPositions)
        let customData = Dictionary(
            uniqueKeysWithValues: (0..<InputLimits.maximumCustomDataKeys).map {
                (text(InputLimits.maximumCustomDataKeyLength, $0), text(InputLimits.maximumCustomDataValueLength))
            })
        let zone = ZoneDefinition(
            id: id(1), name: text(InputLimits.maximumNameLength), description: text(InputLimits.maximumDescriptionLength),
            customData: customData, checkOutEnabled: true,
            fences: [
                FenceDefinition(
                    id: id(2), name: text(InputLimits.maximumNameLength),
                    description: text(InputLimits.maximumDescriptionLength), geometry: .polygon([ring]))
            ])
        #expect(ZoneValidator.validate(ZonesDocument(zones: [zone])).isEmpty)
        let engine = try GeofenceEngine(projects: [ProjectZones(projectId: id(3), zones: [zone])])
        var state = DeviceState()
        func fix(_ seconds: Double, lat: Double) -> Fix {
            Fix(
                projectId: id(3), deviceId: id(4), timestamp: Scenario.start.addingTimeInterval(seconds), lat: lat,
                lon: Self.lon, accuracy: 5.123456789012345, speed: 1.123456789012345, bearing: 359.12345678901234,
                fixId: id(5 + Int(seconds)))
        }
        let checkIn = try #require(engine.evaluate(fix(0, lat: Self.lat), state: &state).events.first)
        let checkOut = try #require(engine.evaluate(fix(60, lat: Self.lat + 0.05), state: &state).events.first)
        #expect(checkIn.fence?.geometry == .polygon([ring]))
        for event in [checkIn, checkOut] {
            let size = try encoder.encode(event).count
            #expect(size < InputLimits.maximumEventBytes, "\(event.type) is \(size) bytes")
        }
    }

    @Test(arguments: [InputLimits.maximumEventGeometryPositions, InputLimits.maximumEventGeometryPositions + 1])
    func geometryOverAThousandPositionsIsLeftOutOfEvents(positions: Int) throws {
        let ring = RandomWorld.wobbly(lat: Self.lat, lon: Self.lon, radius: 300, vertices: positions - 1)
        let zone = ZoneDefinition(id: "z", name: "Z", fences: [FenceDefinition(id: "f", geometry: .polygon([ring]))])
        var trip = try Scenario(zones: [zone])
        let event = try #require(trip.at(0, lat: Self.lat, lon: Self.lon).first)
        let omitted = positions > InputLimits.maximumEventGeometryPositions
        #expect(event.fence?.geometry == (omitted ? nil : .polygon([ring])))
        #expect(event.fence?.geometryOmitted == (omitted ? true : nil))
        let json = String(decoding: try WireJSON.encoder().encode(event), as: UTF8.self)
        #expect(json.contains(#""geometryOmitted":true"#) == omitted)
    }
}
