import Foundation
import Shared
import Testing

/// A zones document's members that no field reads are named, wherever they are; the
/// members a field reads, defaults and nulls included, are not.
@Suite struct ZonesUnknownMembersTests {
    @Test func misspeltMembersAreNamedWhereverTheyAre() throws {
        let document = """
            {"zones": [
              {"id": "cafe", "minimumRetrigerTime": 600, "conditions": {"maxSpeeed": 3, "maxSpeed": 5},
               "customData": {"anything": "goes"}, "description": null, "enabled": true,
               "fences": [{"id": "door", "geometry": {"type": "Point", "coordinates": [13.4, 52.5]}, "radius": 30, "raduis": 40}]},
              {"id": "park", "fences": [{"id": "gate", "geometry": {"type": "Point", "coordinates": [13.5, 52.5]}, "radius": 50}]}
            ], "version": 2}
            """
        #expect(
            try Self.unknownMembers(Data(document.utf8)) == [
                "version", "zones[cafe].conditions.maxSpeeed", "zones[cafe].fences[door].raduis", "zones[cafe].minimumRetrigerTime",
            ])
    }

    @Test func theExampleZonesHaveNone() throws {
        let examples = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../examples")
        for name in ["zones.json"] {
            let data = try Data(contentsOf: examples.appendingPathComponent(name))
            #expect(try Self.unknownMembers(data) == [], "\(name)")
        }
    }

    static func unknownMembers(_ json: Data) throws -> [String] {
        try ZonesDocument.unknownMembers(of: try WireJSON.decoder().decode(ZonesDocument.self, from: json), in: json)
    }
}
