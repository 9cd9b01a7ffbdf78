import Foundation
import Shared
import Testing

@Suite struct WireFormatTests {
    @Test func zonesDocumentFillsDefaultsAndKeepsGeometry() throws {
        let json = """
            {"zones":[{"id":"z1","name":"Cafe","customData":{"k":"v"},
              "fences":[{"id":"f1","geometry":{"type":"Point","coordinates":[144.96,-37.81]},"radius":50},
                        {"id":"f2","geometry":{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,0]]]}},
                        {"id":"f3","geometry":{"type":"LineString","coordinates":[[0,0],[1,1]]}}]}]}
            """
        let document = try WireJSON.decoder().decode(ZonesDocument.self, from: Data(json.utf8))
        let zone = try #require(document.zones.first)
        #expect(zone.enabled && !zone.checkOutEnabled && zone.minimumRetriggerTime == 0 && zone.description == "")
        #expect(zone.fences.map(\.geometry.typeName) == ["Point", "Polygon", "LineString"])
        #expect(zone.fences[0].geometry == .point(Position(lon: 144.96, lat: -37.81)))
        let again = try WireJSON.decoder().decode(ZonesDocument.self, from: try WireJSON.encoder().encode(document))
        #expect(again == document)
    }

    @Test func unknownGeometryTypeIsAnError() {
        let json = #"{"zones":[{"id":"z","fences":[{"id":"f","geometry":{"type":"Circle","coordinates":[0,0]}}]}]}"#
        #expect(throws: DecodingError.self) { try WireJSON.decoder().decode(ZonesDocument.self, from: Data(json.utf8)) }
    }

    @Test func webhookPayloadNamesTheEventType() throws {
        let event = CheckEvent(
            eventId: "e1", type: .checkout, projectId: "p", deviceId: "d", checkInId: "c1",
            zone: ZoneSummary(id: "z", name: "Z", description: "", customData: ["a": "b"]),
            location: EventLocation(timestamp: Date(timeIntervalSince1970: 100), lat: 1, lon: 2), willCheckOut: true,
            mode: .normal, checkInTime: Date(timeIntervalSince1970: 40), checkOutTime: Date(timeIntervalSince1970: 100),
            dwellSeconds: 60, reason: .beaconLost)
        let payload = WebhookPayload(event: event)
        #expect(payload.type == "zone.checkout")
        let object = try #require(try JSONSerialization.jsonObject(with: try WireJSON.encoder().encode(payload)) as? [String: Any])
        #expect(object["type"] as? String == "zone.checkout")
        let data = try #require(object["data"] as? [String: Any])
        #expect(data["reason"] as? String == "beacon-lost")
        #expect(data["checkInTime"] as? String == "1970-01-01T00:00:40.000Z")
    }

    /// Keys are written sorted, so the same event is the same bytes in every process
    /// (a dictionary's own order differs between processes, so repeating the encoding
    /// within one process would prove nothing).
    @Test func encodingSortsKeys() throws {
        let zone = ZoneSummary(id: "z", name: "Z", description: "", customData: ["b": "2", "a": "1", "c": "3"])
        let text = String(decoding: try WireJSON.encoder().encode(zone), as: UTF8.self)
        #expect(text == #"{"customData":{"a":"1","b":"2","c":"3"},"description":"","id":"z","name":"Z"}"#)
    }
}
