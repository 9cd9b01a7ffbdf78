import Foundation
import Shared
import Testing

@testable import Geofence

/// Every event of a device carries `sequence` 1, 2, 3 … in decision order, across
/// check-ins and check-outs, timeout check-outs included (docs/concepts.md#events-and-webhooks).
@Suite struct SequenceTests {
    static let lat = 40.7128
    static let lon = -74.0060

    @Test func eventsOfADeviceAreNumberedInDecisionOrderAcrossTypes() throws {
        let zones = [
            circleZone("a", lat: Self.lat, lon: Self.lon, radius: 100),
            circleZone("b", lat: Self.lat, lon: Self.lon, radius: 300),
        ]
        var trip = try Scenario(zones: zones)
        var events = trip.at(0, lat: Self.lat, lon: Self.lon)
        let far = Scenario.offset(Self.lat, Self.lon, metres: 2000)
        events += trip.at(60, lat: far.lat, lon: far.lon)
        events += trip.at(120, lat: Self.lat, lon: Self.lon)
        events += trip.engine.checkOutStale(
            state: &trip.state, projectId: "p1", deviceId: "d1", now: Scenario.start.addingTimeInterval(120 + 7200))
        #expect(
            summary(events) == [
                "checkin a", "checkin b", "checkout a exit", "checkout b exit", "checkin a", "checkin b",
                "checkout a timeout", "checkout b timeout",
            ])
        #expect(events.map(\.sequence) == Array(1...8))
    }

    @Test func theCounterSurvivesTheStoredStateAndOldStatesStartAtZero() throws {
        var trip = try Scenario(zones: [circleZone("z", lat: Self.lat, lon: Self.lon, radius: 100)])
        #expect(trip.at(0, lat: Self.lat, lon: Self.lon).map(\.sequence) == [1])
        trip.state = try JSONDecoder().decode(DeviceState.self, from: try JSONEncoder().encode(trip.state))
        let far = Scenario.offset(Self.lat, Self.lon, metres: 2000)
        #expect(trip.at(60, lat: far.lat, lon: far.lon).map(\.sequence) == [2])

        // A state written before events were numbered has no counter: it decodes, and numbering starts at 1.
        let start = Int(Scenario.start.timeIntervalSince1970)
        let stored = #"{"t": \#(start), "z": [{"id": "z", "in": true, "o": {"id": "c1", "t": \#(start)}}]}"#
        var old = try JSONDecoder().decode(DeviceState.self, from: Data(stored.utf8))
        #expect(old.lastSequence == 0)
        let exit = trip.engine.evaluate(Scenario.fix(at: 10, lat: far.lat, lon: far.lon), state: &old).events
        #expect(summary(exit) == ["checkout z exit"])
        #expect(exit.map(\.sequence) == [1])
        #expect(old.lastSequence == 1)
    }
}
