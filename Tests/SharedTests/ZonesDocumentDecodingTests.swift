import Foundation
import Shared
import Testing

/// A zones document that cannot be read names every zone, fence and beacon at fault, each
/// with its first problem, not the first problem of the document alone.
@Suite struct ZonesDocumentDecodingTests {
    static let fence = #"{"id": "door", "geometry": {"type": "Point", "coordinates": [13.4, 52.5]}, "radius": 30}"#

    @Test func everyZoneFenceAndBeaconAtFaultIsNamed() throws {
        let document = """
            {"zones": [
              {"id": "cafe", "minimumRetriggerTime": "600", "fences": [\(Self.fence)]},
              {"id": "park", "fences": [\(Self.fence)]},
              {"id": "mall", "fences": [{"id": "a", "geometry": {"type": "Point", "coordinates": [13.4, 52.5]}, "radius": "30"},
                                       {"id": "b", "radius": 30}, \(Self.fence)],
               "beacons": [{"id": "lobby", "uuid": "F7826DA6-4FA2-4E98-8024-BC5B71E0893E", "major": "1"}]}
            ]}
            """
        let error = #expect(throws: DecodingFailures.self) {
            try WireJSON.decoder().decode(ZonesDocument.self, from: Data(document.utf8))
        }
        let named = DecodingErrorText.parameters(try #require(error))
        #expect(
            named.map(\.name) == [
                "zones[0].minimumRetriggerTime", "zones[2].fences[0].radius", "zones[2].fences[1].geometry",
                "zones[2].beacons[0].major",
            ])
        #expect(named.map(\.reason) == ["must be a number", "must be a number", "is required", "must be a whole number"])
        #expect(DecodingErrorText.lines(try #require(error)).count == 4)
    }

    /// What reads well reads as before: defaults, nulls, and an encoded document read back.
    @Test func aDocumentThatReadsIsReadWhole() throws {
        let document = """
            {"zones": [{"id": "cafe", "fences": [\(Self.fence)], "beacons": null},
                       {"id": "park", "name": "Park", "fences": null}]}
            """
        let zones = try WireJSON.decoder().decode(ZonesDocument.self, from: Data(document.utf8))
        #expect(zones.zones.map(\.id) == ["cafe", "park"])
        #expect(zones.zones.map(\.fences.count) == [1, 0] && zones.zones.allSatisfy(\.beacons.isEmpty))
        #expect(zones.zones[1].name == "Park" && zones.zones[0].name == "cafe")
        let again = try WireJSON.decoder().decode(ZonesDocument.self, from: try JSONEncoder().encode(zones))
        #expect(again == zones)
        // No zones member: the one problem, as before.
        #expect(throws: DecodingError.self) { try WireJSON.decoder().decode(ZonesDocument.self, from: Data("{}".utf8)) }
    }
}
