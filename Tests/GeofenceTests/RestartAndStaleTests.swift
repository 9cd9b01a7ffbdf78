import Foundation
import Shared
import Testing

@testable import Geofence

/// Restart mode (docs/evaluation-rules.md#restart-mode) and stale check-outs
/// (docs/evaluation-rules.md#stale-check-out).
@Suite struct RestartAndStaleTests {
    static let lat = 40.7128
    static let lon = -74.0060

    @Test(arguments: [(40.0, true), (60.0, false)])
    func restartModeWidensCircles(outside: Double, checksIn: Bool) throws {
        var trip = try Scenario(zones: [circleZone("z", lat: Self.lat, lon: Self.lon, radius: 100)])
        let p = Scenario.offset(Self.lat, Self.lon, metres: 100 + outside)
        #expect(trip.at(0, lat: p.lat, lon: p.lon, mode: .restart).isEmpty == !checksIn)
        var normal = try Scenario(zones: [circleZone("z", lat: Self.lat, lon: Self.lon, radius: 100)])
        #expect(normal.at(0, lat: p.lat, lon: p.lon).isEmpty)
    }

    @Test(arguments: [(40.0, true), (60.0, false)])
    func restartModeUsesThePolygonsEnclosingCircle(outside: Double, checksIn: Bool) throws {
        // A 200 m square's enclosing circle has a radius of 141.4 m.
        let zone = ZoneDefinition(
            id: "sq", name: "Square",
            fences: [FenceDefinition(id: "f", geometry: .polygon([square(lat: Self.lat, lon: Self.lon, side: 200)]))])
        var trip = try Scenario(zones: [zone])
        let p = Scenario.offset(Self.lat, Self.lon, metres: 2.0.squareRoot() * 100 + outside, bearing: 45)
        #expect(trip.at(0, lat: p.lat, lon: p.lon, mode: .restart).isEmpty == !checksIn)
    }

    @Test func restartModeSkipsConditionedZonesButStillChecksOut() throws {
        let conditioned = circleZone("c", lat: Self.lat, lon: Self.lon, radius: 100, conditions: ZoneConditions(maxSpeed: 50))
        var trip = try Scenario(zones: [conditioned])
        #expect(trip.at(0, lat: Self.lat, lon: Self.lon, speed: 1, mode: .restart).isEmpty)

        var plain = try Scenario(zones: [circleZone("z", lat: Self.lat, lon: Self.lon, radius: 100)])
        #expect(summary(plain.at(0, lat: Self.lat, lon: Self.lon)) == ["checkin z"])
        let near = Scenario.offset(Self.lat, Self.lon, metres: 160)
        #expect(plain.at(10, lat: near.lat, lon: near.lon, mode: .restart).isEmpty)
        let far = Scenario.offset(Self.lat, Self.lon, metres: 1000)
        #expect(summary(plain.at(20, lat: far.lat, lon: far.lon, mode: .restart)) == ["checkout z exit"])
    }

    @Test func staleCheckOutAtTheDeadline() throws {
        var trip = try Scenario(zones: [circleZone("z", lat: Self.lat, lon: Self.lon, radius: 100)])
        let checkIn = trip.at(0, lat: Self.lat, lon: Self.lon)
        let deadline = Scenario.start.addingTimeInterval(7200)
        #expect(trip.engine.staleDeadline(of: trip.state) == deadline)
        #expect(
            trip.engine.checkOutStale(state: &trip.state, projectId: "p1", deviceId: "d1", now: deadline.addingTimeInterval(-1)).isEmpty)
        let events = trip.engine.checkOutStale(state: &trip.state, projectId: "p1", deviceId: "d1", now: deadline.addingTimeInterval(99))
        #expect(summary(events) == ["checkout z timeout"])
        #expect(events.first?.checkOutTime == deadline)
        #expect(events.first?.checkInId == checkIn.first?.eventId)
        #expect(events.first?.dwellSeconds == 7200)
        #expect(trip.engine.staleDeadline(of: trip.state) == nil)
        // Back inside later: a new visit.
        #expect(summary(trip.at(9000, lat: Self.lat, lon: Self.lon)) == ["checkin z"])
    }

    @Test func aLateFixAfterSilenceDecidesTheSameAsTheSweep() throws {
        let zones = [circleZone("z", lat: Self.lat, lon: Self.lon, radius: 100)]
        var swept = try Scenario(zones: zones)
        swept.at(0, lat: Self.lat, lon: Self.lon)
        var events = swept.engine.checkOutStale(
            state: &swept.state, projectId: "p1", deviceId: "d1", now: Scenario.start.addingTimeInterval(8000))
        events += swept.at(9000, lat: Self.lat, lon: Self.lon)

        var unswept = try Scenario(zones: zones)
        unswept.at(0, lat: Self.lat, lon: Self.lon)
        let direct = unswept.at(9000, lat: Self.lat, lon: Self.lon)
        #expect(summary(direct) == ["checkout z timeout", "checkin z"])
        #expect(direct == events)
        #expect(swept.state == unswept.state)
    }

    @Test func deletedZonesAreForgottenQuietly() throws {
        var trip = try Scenario(zones: [circleZone("z", lat: Self.lat, lon: Self.lon, radius: 100)])
        trip.at(0, lat: Self.lat, lon: Self.lon)
        let other = try GeofenceEngine(projects: [ProjectZones(projectId: "p1", zones: [])])
        var state = trip.state
        let fix = Scenario.fix(at: 10, lat: 0, lon: 0)
        #expect(other.evaluate(fix, state: &state).events.isEmpty)
        #expect(state.openCheckInZoneIds.isEmpty)
        #expect(other.checkOutStale(state: &state, projectId: "p1", deviceId: "d1", now: .distantFuture).isEmpty)
    }

    @Test func stateSurvivesJSON() throws {
        var trip = try Scenario(zones: [circleZone("z", lat: Self.lat, lon: Self.lon, radius: 100, mrt: 60)])
        trip.at(0, lat: Self.lat, lon: Self.lon)
        let data = try JSONEncoder().encode(trip.state)
        #expect(try JSONDecoder().decode(DeviceState.self, from: data) == trip.state)
        #expect(data.count < 400)
    }
}
