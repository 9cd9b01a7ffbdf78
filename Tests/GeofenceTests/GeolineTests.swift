import Foundation
import Shared
import Testing

@testable import Geofence

/// Geoline crossings (docs/evaluation-rules.md#geoline-crossings): direction, gap, never a
/// check-out, not in restart mode.
@Suite struct GeolineTests {
    static let lat = -33.8688
    static let lon = 151.2093

    /// A line 200 m long running west to east through (lat, lon).
    static func zone(checkOut: Bool = true, mrt: Double = 0) -> ZoneDefinition {
        let west = Earth.destination(lat: lat, lon: lon, bearing: 270, distance: 100)
        let east = Earth.destination(lat: lat, lon: lon, bearing: 90, distance: 100)
        return ZoneDefinition(
            id: "gate", name: "Gate", minimumRetriggerTime: mrt, checkOutEnabled: checkOut,
            fences: [
                FenceDefinition(
                    id: "line", geometry: .lineString([Position(lon: west.lon, lat: west.lat), Position(lon: east.lon, lat: east.lat)]))
            ])
    }

    static let north = Earth.destination(lat: lat, lon: lon, bearing: 0, distance: 30)
    static let south = Earth.destination(lat: lat, lon: lon, bearing: 180, distance: 30)

    @Test func southboundCrossingIsLeftToRight() throws {
        var trip = try Scenario(zones: [Self.zone()])
        #expect(trip.at(0, lat: Self.north.lat, lon: Self.north.lon).isEmpty)
        let events = trip.at(20, lat: Self.south.lat, lon: Self.south.lon)
        #expect(summary(events) == ["checkin gate"])
        #expect(events.first?.crossing?.direction == .leftToRight)
        #expect(events.first?.willCheckOut == false)
        #expect(events.first?.fence?.id == "line")
        let crossing = try #require(events.first?.crossing)
        #expect(Earth.distance(lat1: crossing.lat, lon1: crossing.lon, lat2: Self.lat, lon2: Self.lon) < 0.01)
        // Never a check-out, and the next crossing (northbound) is a new check-in.
        let back = trip.at(40, lat: Self.north.lat, lon: Self.north.lon)
        #expect(summary(back) == ["checkin gate"])
        #expect(back.first?.crossing?.direction == .rightToLeft)
    }

    @Test func gapLongerThanMaxCrossingGapIsNoCrossing() throws {
        var trip = try Scenario(zones: [Self.zone()])
        trip.at(0, lat: Self.north.lat, lon: Self.north.lon)
        #expect(trip.at(601, lat: Self.south.lat, lon: Self.south.lon).isEmpty)
        var onTime = try Scenario(zones: [Self.zone()])
        onTime.at(0, lat: Self.north.lat, lon: Self.north.lon)
        #expect(summary(onTime.at(600, lat: Self.south.lat, lon: Self.south.lon)) == ["checkin gate"])
    }

    @Test func restartModeNeverCrosses() throws {
        var trip = try Scenario(zones: [Self.zone()])
        trip.at(0, lat: Self.north.lat, lon: Self.north.lon)
        #expect(trip.at(20, lat: Self.south.lat, lon: Self.south.lon, mode: .restart).isEmpty)
    }

    @Test func passingBesideTheLineIsNoCrossing() throws {
        var trip = try Scenario(zones: [Self.zone()])
        let a = Earth.destination(lat: Self.north.lat, lon: Self.north.lon, bearing: 90, distance: 150)
        let b = Earth.destination(lat: Self.south.lat, lon: Self.south.lon, bearing: 90, distance: 150)
        trip.at(0, lat: a.lat, lon: a.lon)
        #expect(trip.at(20, lat: b.lat, lon: b.lon).isEmpty)
    }

    @Test func fixExactlyOnTheLineCountsOnce() {
        let line = GeolineShape(positions: [Position(lon: 0, lat: 0), Position(lon: 1, lat: 0)])
        let arrive = line.firstCrossing(fromLat: 0.1, fromLon: 0.5, toLat: 0, toLon: 0.5)
        let leave = line.firstCrossing(fromLat: 0, fromLon: 0.5, toLat: -0.1, toLon: 0.5)
        #expect(arrive != nil)
        #expect(leave == nil)
    }

    @Test func crossingAcrossTheAntimeridian() {
        let line = GeolineShape(positions: [Position(lon: 179.9, lat: 10), Position(lon: -179.9, lat: 10)])
        let crossing = line.firstCrossing(fromLat: 10.1, fromLon: -179.95, toLat: 9.9, toLon: -179.95)
        #expect(crossing?.direction == .leftToRight)
        #expect(abs((crossing?.lon ?? 0) + 179.95) < 1e-9)
    }
}
