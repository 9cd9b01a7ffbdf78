import Foundation
import Shared
import Testing

@testable import Geofence

/// Which fix and which zone get the entries of geoline crossings that did not count, of beacons
/// heard under their threshold and of inaccurate fixes (docs/evaluation-rules.md#which-reason):
/// each is judged against the state the earlier fixes left, so a zone the device was in gets
/// none, and a zone takes one crossing per fix.
@Suite struct EntryAttributionTests {
    static let lat = -33.8688
    static let lon = 151.2093
    static let north = Earth.destination(lat: lat, lon: lon, bearing: 0, distance: 30)
    static let south = Earth.destination(lat: lat, lon: lon, bearing: 180, distance: 30)

    /// A line 200 m long running west to east, `metresSouth` south of (lat, lon).
    static func line(_ id: String, metresSouth: Double = 0) -> FenceDefinition {
        let middle = Earth.destination(lat: lat, lon: lon, bearing: 180, distance: metresSouth)
        let west = Earth.destination(lat: middle.lat, lon: middle.lon, bearing: 270, distance: 100)
        let east = Earth.destination(lat: middle.lat, lon: middle.lon, bearing: 90, distance: 100)
        return FenceDefinition(
            id: id, geometry: .lineString([Position(lon: west.lon, lat: west.lat), Position(lon: east.lon, lat: east.lat)]))
    }

    /// A zone with a circle of 50 m whose centre lies 120 m north of its geoline.
    static func yardWithGate() -> ZoneDefinition {
        let centre = lawnCentre
        return ZoneDefinition(
            id: "yard", name: "Yard", checkOutEnabled: true,
            fences: [
                FenceDefinition(id: "lawn", geometry: .point(Position(lon: centre.lon, lat: centre.lat)), radius: 50),
                line("gate"),
            ])
    }

    static let lawnCentre = Earth.destination(lat: lat, lon: lon, bearing: 0, distance: 120)

    @Test func aCrossingOnTheFixThatLeavesTheZoneIsNoEntry() throws {
        var trip = try Scenario(zones: [Self.yardWithGate()])
        #expect(trip.entries(0, lat: Self.lawnCentre.lat, lon: Self.lawnCentre.lon) == ["yard/lawn checked-in"])
        // Leaving the lawn across the gate: the device was in the zone, so the crossing enters nothing.
        #expect(trip.entries(60, lat: Self.south.lat, lon: Self.south.lon) == ["yard/lawn checked-out exit"])
        // Back across the gate from outside, it is an entry.
        #expect(trip.entries(120, lat: Self.north.lat, lon: Self.north.lon) == ["yard/gate checked-in"])
    }

    @Test func crossingGapTooLongIsNotGivenForAZoneTheDeviceWasIn() throws {
        var trip = try Scenario(zones: [Self.yardWithGate()])
        #expect(trip.entries(0, lat: Self.lawnCentre.lat, lon: Self.lawnCentre.lon) == ["yard/lawn checked-in"])
        #expect(trip.entries(700, lat: Self.south.lat, lon: Self.south.lon) == ["yard/lawn checked-out exit"])
        #expect(trip.entries(1_400, lat: Self.north.lat, lon: Self.north.lon) == ["yard/gate ignored crossing-gap-too-long"])
    }

    @Test func aZoneTakesOneCrossingPerFixOfItsFirstGeoline() throws {
        let zone = ZoneDefinition(id: "gates", name: "Gates", fences: [Self.line("inner", metresSouth: 10), Self.line("outer")])
        var trip = try Scenario(zones: [zone])
        #expect(trip.entries(0, lat: Self.north.lat, lon: Self.north.lon).isEmpty)
        #expect(trip.entries(700, lat: Self.south.lat, lon: Self.south.lon) == ["gates/inner ignored crossing-gap-too-long"])
        #expect(trip.entries(720, lat: Self.north.lat, lon: Self.north.lon) == ["gates/inner checked-in"])
    }

    /// A path longer than the gap is no crossing, so an inaccurate fix at its end would not have
    /// crossed either: the reason is the gap, not the accuracy.
    @Test func crossingGapTooLongIsGivenForAnInaccurateFixPastTheGap() throws {
        var trip = try Scenario(zones: [GeolineTests.zone()])
        #expect(trip.entries(0, lat: Self.north.lat, lon: Self.north.lon).isEmpty)
        #expect(trip.entries(700, lat: Self.south.lat, lon: Self.south.lon, accuracy: 500) == ["gate/line ignored crossing-gap-too-long"])
    }

    /// An inaccurate run across a geoline: each fix is judged from the last accurate one, so only
    /// those within the gap of it would have crossed.
    @Test func accuracyTooLowOnlyOnTheFixesOfAnInaccurateRunThatWouldHaveCrossed() throws {
        var trip = try Scenario(zones: [GeolineTests.zone()])
        #expect(trip.entries(0, lat: Self.north.lat, lon: Self.north.lon).isEmpty)
        #expect(trip.entries(300, lat: Self.south.lat, lon: Self.south.lon, accuracy: 500) == ["gate/line ignored accuracy-too-low"])
        #expect(trip.entries(600, lat: Self.south.lat, lon: Self.south.lon, accuracy: 500) == ["gate/line ignored accuracy-too-low"])
        #expect(trip.entries(601, lat: Self.south.lat, lon: Self.south.lon, accuracy: 500) == ["gate/line ignored crossing-gap-too-long"])
        #expect(trip.entries(660, lat: Self.north.lat, lon: Self.north.lon, accuracy: 500).isEmpty)
        // The first accurate fix after the run is judged from the one before it.
        #expect(trip.entries(700, lat: Self.south.lat, lon: Self.south.lon) == ["gate/line ignored crossing-gap-too-long"])
        #expect(trip.entries(760, lat: Self.north.lat, lon: Self.north.lon) == ["gate/line checked-in"])
    }

    /// An inaccurate fix inside a fence, in a run: every fix of the run would have entered, and the
    /// first accurate one does.
    @Test func accuracyTooLowOnEveryFixOfAnInaccurateRunThatWouldHaveEntered() throws {
        var trip = try Scenario(zones: [circleZone("z", lat: Self.lat, lon: Self.lon, radius: 100)])
        let far = Scenario.offset(Self.lat, Self.lon, metres: 500)
        #expect(trip.entries(0, lat: far.lat, lon: far.lon).isEmpty)
        #expect(trip.entries(10, lat: Self.lat, lon: Self.lon, accuracy: 150) == ["z/z-f ignored accuracy-too-low"])
        #expect(trip.entries(20, lat: far.lat, lon: far.lon, accuracy: 150).isEmpty)
        #expect(trip.entries(30, lat: Self.lat, lon: Self.lon, accuracy: 150) == ["z/z-f ignored accuracy-too-low"])
        #expect(trip.entries(40, lat: Self.lat, lon: Self.lon) == ["z/z-f checked-in"])
        #expect(trip.entries(50, lat: far.lat, lon: far.lon, accuracy: 150) == ["z/- ignored accuracy-too-low"])
        #expect(trip.entries(60, lat: far.lat, lon: far.lon) == ["z/z-f checked-out exit"])
    }

    @Test func aWeakSightingOnTheFixThatLeavesTheBeaconZoneIsNoEntry() throws {
        var trip = try Scenario(zones: [BeaconTests.zone()])
        #expect(trip.entries(0, lat: 0, lon: 0, beacons: BeaconTests.seen(-60)) == ["shop/b1 checked-in"])
        // Heard under the threshold while in the zone: nothing; the sighting does not keep the device in.
        #expect(trip.entries(30, lat: 0, lon: 0, beacons: BeaconTests.seen(-75)).isEmpty)
        #expect(trip.entries(61, lat: 0, lon: 0, beacons: BeaconTests.seen(-75)) == ["shop/- checked-out beacon-lost"])
        // Out of the zone, and staying out: now the weak sighting is told.
        #expect(trip.entries(90, lat: 0, lon: 0, beacons: BeaconTests.seen(-75)) == ["shop/b1 ignored beacon-rssi-below-threshold"])
    }

    /// Check-ins closed by a silence are listed in zone order, whichever zone the device entered first.
    @Test func timeoutCheckOutsComeInZoneOrder() throws {
        let town = circleZone("b-town", lat: Self.lat, lon: Self.lon, radius: 1_000)
        let shop = circleZone("a-shop", lat: Self.lat, lon: Self.lon, radius: 50)
        var trip = try Scenario(zones: [town, shop])
        let edge = Scenario.offset(Self.lat, Self.lon, metres: 500)
        #expect(summary(trip.at(0, lat: edge.lat, lon: edge.lon)) == ["checkin b-town"])
        #expect(summary(trip.at(60, lat: Self.lat, lon: Self.lon)) == ["checkin a-shop"])
        #expect(
            trip.entries(10_000, lat: edge.lat, lon: edge.lon) == [
                "a-shop/a-shop-f checked-out timeout", "b-town/b-town-f checked-out timeout", "b-town/b-town-f checked-in",
            ])
    }

    @Test func theBeaconIsLeftOnTheFirstFixPastTheExitTime() throws {
        var zone = BeaconTests.zone()
        zone.checkOutEnabled = false
        var trip = try Scenario(zones: [zone])
        #expect(trip.entries(0, lat: 0, lon: 0, beacons: BeaconTests.seen(-60)) == ["shop/b1 checked-in"])
        #expect(trip.entries(50, lat: 0, lon: 0, accuracy: 500, beacons: BeaconTests.seen(-75)).isEmpty)
        #expect(trip.entries(60, lat: 0, lon: 0).isEmpty)
        #expect(trip.entries(61, lat: 0, lon: 0, beacons: BeaconTests.seen(-75)) == ["shop/- left"])
        #expect(trip.entries(62, lat: 0, lon: 0, beacons: BeaconTests.seen(-75)) == ["shop/b1 ignored beacon-rssi-below-threshold"])
    }
}
