import Foundation
import Shared
import Testing

@testable import Geofence

/// Presence, check-in, check-out with the exit buffer, and MRT
/// (docs/evaluation-rules.md, from #inside-a-fence to #stale-check-out).
@Suite struct CheckInOutTests {
    static let lat = 48.8566
    static let lon = 2.3522

    @Test func circleCheckInAndOutWithBuffer() throws {
        var trip = try Scenario(zones: [circleZone("z1", lat: Self.lat, lon: Self.lon, radius: 100)])
        let far = Scenario.offset(Self.lat, Self.lon, metres: 500)
        let inside = Scenario.offset(Self.lat, Self.lon, metres: 50)
        let band = Scenario.offset(Self.lat, Self.lon, metres: 115)
        let out = Scenario.offset(Self.lat, Self.lon, metres: 125)
        #expect(summary(trip.at(0, lat: far.lat, lon: far.lon)) == [])
        let checkIn = trip.at(10, lat: inside.lat, lon: inside.lon)
        #expect(summary(checkIn) == ["checkin z1"])
        #expect(checkIn.first?.willCheckOut == true)
        #expect(checkIn.first?.zone.customData == ["k": "z1"])
        #expect(checkIn.first?.fence?.id == "z1-f")
        #expect(summary(trip.at(20, lat: band.lat, lon: band.lon)) == [])
        #expect(summary(trip.at(30, lat: inside.lat, lon: inside.lon)) == [])
        let checkOut = trip.at(40, lat: out.lat, lon: out.lon)
        #expect(summary(checkOut) == ["checkout z1 exit"])
        #expect(checkOut.first?.checkInId == checkIn.first?.eventId)
        #expect(checkOut.first?.dwellSeconds == 30)
        #expect(checkOut.first?.fence?.id == "z1-f")
    }

    @Test func exactlyOnTheRadiusIsInside() throws {
        let edge = Scenario.offset(Self.lat, Self.lon, metres: 100, bearing: 33)
        let radius = Earth.distance(lat1: Self.lat, lon1: Self.lon, lat2: edge.lat, lon2: edge.lon)
        var trip = try Scenario(zones: [circleZone("z1", lat: Self.lat, lon: Self.lon, radius: radius)])
        #expect(summary(trip.at(0, lat: edge.lat, lon: edge.lon)) == ["checkin z1"])
        var outside = try Scenario(zones: [circleZone("z1", lat: Self.lat, lon: Self.lon, radius: radius.nextDown)])
        #expect(summary(outside.at(0, lat: edge.lat, lon: edge.lon)) == [])
    }

    @Test func mrtCountsFromCheckInWithoutCheckOut() throws {
        var trip = try Scenario(zones: [circleZone("z1", lat: Self.lat, lon: Self.lon, radius: 100, mrt: 3600, checkOut: false)])
        let out = Scenario.offset(Self.lat, Self.lon, metres: 500)
        #expect(summary(trip.at(0, lat: Self.lat, lon: Self.lon)) == ["checkin z1"])
        trip.at(100, lat: out.lat, lon: out.lon)
        #expect(summary(trip.at(3599, lat: Self.lat, lon: Self.lon)) == [])
        trip.at(3599.5, lat: out.lat, lon: out.lon)
        #expect(summary(trip.at(3600, lat: Self.lat, lon: Self.lon)) == ["checkin z1"])
    }

    @Test func mrtCountsFromCheckOutWhenCheckOutIsEnabled() throws {
        // Check-in 10:00, check-out 10:35, MRT 1 h: an entry from 11:35 on checks in again.
        var trip = try Scenario(zones: [circleZone("z1", lat: Self.lat, lon: Self.lon, radius: 100, mrt: 3600)])
        let out = Scenario.offset(Self.lat, Self.lon, metres: 500)
        #expect(summary(trip.at(0, lat: Self.lat, lon: Self.lon)) == ["checkin z1"])
        #expect(summary(trip.at(2100, lat: out.lat, lon: out.lon)) == ["checkout z1 exit"])
        #expect(summary(trip.at(5699, lat: Self.lat, lon: Self.lon)) == [])
        trip.at(5699.5, lat: out.lat, lon: out.lon)
        #expect(summary(trip.at(5700, lat: Self.lat, lon: Self.lon)) == ["checkin z1"])
    }

    @Test func stayingInsideNeverTriggersAgain() throws {
        var trip = try Scenario(zones: [circleZone("z1", lat: Self.lat, lon: Self.lon, radius: 100, mrt: 60, checkOut: false)])
        #expect(summary(trip.at(0, lat: Self.lat, lon: Self.lon)) == ["checkin z1"])
        #expect(summary(trip.at(1000, lat: Self.lat, lon: Self.lon)) == [])
    }

    @Test func inaccurateFixesNeitherEnterNorLeave() throws {
        var trip = try Scenario(zones: [circleZone("z1", lat: Self.lat, lon: Self.lon, radius: 100)])
        let out = Scenario.offset(Self.lat, Self.lon, metres: 500)
        #expect(summary(trip.at(0, lat: Self.lat, lon: Self.lon, accuracy: 150)) == [])
        #expect(summary(trip.at(10, lat: Self.lat, lon: Self.lon, accuracy: 100)) == ["checkin z1"])
        #expect(summary(trip.at(20, lat: out.lat, lon: out.lon, accuracy: 101)) == [])
        #expect(summary(trip.at(30, lat: out.lat, lon: out.lon, accuracy: nil)) == ["checkout z1 exit"])
    }

    @Test func polygonWithHole() throws {
        let outer = square(lat: Self.lat, lon: Self.lon, side: 400)
        let hole = Array(square(lat: Self.lat, lon: Self.lon, side: 100).reversed())
        let zone = ZoneDefinition(
            id: "z1", name: "Ring", checkOutEnabled: true,
            fences: [FenceDefinition(id: "f", geometry: .polygon([outer, hole]))])
        var trip = try Scenario(zones: [zone])
        #expect(summary(trip.at(0, lat: Self.lat, lon: Self.lon)) == [])
        let ring = Scenario.offset(Self.lat, Self.lon, metres: 120, bearing: 0)
        #expect(summary(trip.at(10, lat: ring.lat, lon: ring.lon)) == ["checkin z1"])
        // 30 m into the hole: beyond the 20 m buffer.
        let hollow = Scenario.offset(Self.lat, Self.lon, metres: 20, bearing: 0)
        #expect(summary(trip.at(20, lat: hollow.lat, lon: hollow.lon)) == ["checkout z1 exit"])
    }

    @Test func lateAndDuplicateFixesAreSkipped() throws {
        var trip = try Scenario(zones: [circleZone("z1", lat: Self.lat, lon: Self.lon, radius: 100)])
        let first = Scenario.fix(at: 10, lat: Self.lat, lon: Self.lon, fixId: "a")
        #expect(trip.engine.evaluate(first, state: &trip.state).outcome == .evaluated)
        #expect(trip.engine.evaluate(first, state: &trip.state).outcome == .duplicate)
        let late = Scenario.fix(at: 5, lat: Self.lat, lon: Self.lon, fixId: "b")
        let skipped = trip.engine.evaluate(late, state: &trip.state)
        #expect(skipped.outcome == .late && skipped.events.isEmpty)
    }

    @Test func eventIdsAreDeterministic() throws {
        func run() throws -> [CheckEvent] {
            var trip = try Scenario(zones: [circleZone("z1", lat: Self.lat, lon: Self.lon, radius: 100)])
            let out = Scenario.offset(Self.lat, Self.lon, metres: 500)
            return trip.at(0, lat: Self.lat, lon: Self.lon) + trip.at(60, lat: out.lat, lon: out.lon)
        }
        let a = try run(), b = try run()
        #expect(a.count == 2)
        #expect(a == b)
        #expect(a[0].eventId != a[1].eventId)
        #expect(a[0].eventId.count == 36)
    }
}

@Suite struct FixIdMemoryTests {
    @Test func rememberedFixIdsAreBoundedAndRecognised() throws {
        var trip = try Scenario(zones: [])
        for i in 0..<100 {
            let fix = Scenario.fix(at: Double(i), lat: 1.5, lon: 1.5, fixId: "id\(i)")
            #expect(trip.engine.evaluate(fix, state: &trip.state).outcome == .evaluated)
        }
        #expect(trip.state.recentFixIds.count == DeviceState.rememberedFixIds)
        for i in 68..<100 {
            let again = Scenario.fix(at: 200, lat: 1.5, lon: 1.5, fixId: "id\(i)")
            #expect(trip.engine.evaluate(again, state: &trip.state).outcome == .duplicate, "id\(i)")
        }
        let forgotten = Scenario.fix(at: 200, lat: 1.5, lon: 1.5, fixId: "id10")
        #expect(trip.engine.evaluate(forgotten, state: &trip.state).outcome == .evaluated)
    }
}
