import Foundation
import Shared
import Testing

@testable import Geofence

/// Beacon sightings (docs/evaluation-rules.md#beacons): RSSI threshold and `beaconExitAfter`.
@Suite struct BeaconTests {
    static let uuid = "F7826DA6-4FA2-4E98-8024-BC5B71E0893E"

    static func zone() -> ZoneDefinition {
        ZoneDefinition(
            id: "shop", name: "Shop", checkOutEnabled: true,
            beacons: [BeaconDefinition(id: "b1", name: "Door", uuid: uuid, major: 1, minor: 2, rssiThreshold: -70)])
    }

    static func seen(_ rssi: Int, minor: Int = 2) -> [BeaconSighting] {
        [BeaconSighting(uuid: uuid, major: 1, minor: minor, rssi: rssi)]
    }

    @Test func sightingAtThresholdChecksInAndSilenceChecksOut() throws {
        var trip = try Scenario(zones: [Self.zone()])
        #expect(trip.at(0, lat: 0, lon: 0, beacons: Self.seen(-71)).isEmpty)
        #expect(trip.at(1, lat: 0, lon: 0, beacons: Self.seen(-70, minor: 3)).isEmpty)
        let checkIn = trip.at(2, lat: 0, lon: 0, beacons: Self.seen(-70))
        #expect(summary(checkIn) == ["checkin shop"])
        #expect(checkIn.first?.beacon?.id == "b1")
        #expect(checkIn.first?.fence == nil)
        #expect(trip.at(30, lat: 0, lon: 0, beacons: Self.seen(-60)).isEmpty)
        #expect(trip.at(90, lat: 0, lon: 0).isEmpty)
        let checkOut = trip.at(91, lat: 0, lon: 0)
        #expect(summary(checkOut) == ["checkout shop beacon-lost"])
        #expect(checkOut.first?.beacon?.id == "b1")
        #expect(checkOut.first?.dwellSeconds == 89)
    }

    @Test func inaccurateLocationStillCountsBeacons() throws {
        var trip = try Scenario(zones: [Self.zone()])
        #expect(summary(trip.at(0, lat: 0, lon: 0, accuracy: 5000, beacons: Self.seen(-50))) == ["checkin shop"])
    }
}
