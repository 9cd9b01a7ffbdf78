import Foundation
import PropertyBased
import Shared
import Testing

@testable import Geofence

/// Point-in-polygon: the banded test agrees with a plain scan of every edge, holes
/// and the antimeridian behave, and the planar metric stays within its documented bound.
@Suite struct PolygonTests {
    /// Even-odd over every edge, the textbook way.
    static func naiveContains(_ rings: [[Position]], lon: Double, lat: Double) -> Bool {
        var inside = false
        for ring in rings {
            for k in 0..<(ring.count - 1) {
                let a = ring[k], b = ring[k + 1]
                if (a.lat > lat) != (b.lat > lat) {
                    let x = a.lon + (lat - a.lat) * (b.lon - a.lon) / (b.lat - a.lat)
                    if lon < x { inside.toggle() }
                }
            }
        }
        return inside
    }

    @Test func bandedTestAgreesWithScanningEveryEdge() async {
        await propertyCheck(count: 40, input: Gen.int(in: 0...Int(Int32.max)), Gen.int(in: 3...3000)) { seed, vertices in
            var rng = SplitMix(seed: UInt64(seed))
            let outer = RandomWorld.star(lat: 45, lon: 7, radius: 1000, vertices: vertices, rng: &rng)
            let hole = Array(RandomWorld.star(lat: 45, lon: 7, radius: 300, vertices: 20, rng: &rng).reversed())
            let rings = [outer, hole]
            let shape = PolygonShape(rings: rings)
            for _ in 0..<400 {
                let p = Earth.destination(
                    lat: 45, lon: 7, bearing: Double.random(in: 0..<360, using: &rng),
                    distance: Double.random(in: 0...1100, using: &rng))
                #expect(shape.contains(lon: p.lon, lat: p.lat) == Self.naiveContains(rings, lon: p.lon, lat: p.lat))
            }
        }
    }

    @Test func tenThousandVerticesUseBands() {
        let ring = RandomWorld.wobbly(lat: 10, lon: 10, radius: 5000, vertices: 9999)
        let shape = PolygonShape(rings: [ring])
        #expect(shape.record.bandCount > 1000)
        let average = Double(shape.store.bandEdges.count) / Double(shape.record.bandCount)
        #expect(average < 16)
        #expect(shape.contains(lon: 10, lat: 10))
    }

    @Test func verticesAndEdgesAreInside() {
        let ring = [
            Position(lon: 0, lat: 0), Position(lon: 1, lat: 0), Position(lon: 1, lat: 1), Position(lon: 0, lat: 1),
            Position(lon: 0, lat: 0),
        ]
        let shape = PolygonShape(rings: [ring])
        for (lon, lat) in [(0.0, 0.0), (1.0, 1.0), (0.5, 0.0), (0.5, 1.0), (0.0, 0.5), (1.0, 0.5), (0, 1)] {
            #expect(shape.contains(lon: lon, lat: lat), "\(lon), \(lat)")
        }
        #expect(!shape.contains(lon: 1.0000001, lat: 0.5))
    }

    @Test func insideAHoleIsOutside() {
        let outer = square(lat: 0, lon: 0, side: 1000)
        let hole = Array(square(lat: 0, lon: 0, side: 200).reversed())
        let shape = PolygonShape(rings: [outer, hole])
        #expect(!shape.contains(lon: 0, lat: 0))
        let ring = Scenario.offset(0, 0, metres: 300)
        #expect(shape.contains(lon: ring.lon, lat: ring.lat))
        #expect(abs(shape.distanceToBoundary(lon: 0, lat: 0) - 100) < 0.01)
    }

    @Test func polygonAcrossTheAntimeridian() throws {
        let ring = [
            Position(lon: 179.99, lat: -0.01), Position(lon: -179.99, lat: -0.01), Position(lon: -179.99, lat: 0.01),
            Position(lon: 179.99, lat: 0.01), Position(lon: 179.99, lat: -0.01),
        ]
        let zone = ZoneDefinition(id: "dateline", name: "Dateline", fences: [FenceDefinition(id: "f", geometry: .polygon([ring]))])
        for lon in [179.995, 180, -180, -179.995] {
            var trip = try Scenario(zones: [zone])
            #expect(summary(trip.at(0, lat: 0, lon: lon)) == ["checkin dateline"], "\(lon)")
        }
        var outside = try Scenario(zones: [zone])
        #expect(outside.at(0, lat: 0, lon: 179.98).isEmpty)
        #expect(outside.at(1, lat: 0, lon: -179.98).isEmpty)
    }

    @Test func eventsCarryTheGeometryAsGiven() throws {
        let dateline = [
            Position(lon: 179.99, lat: -0.01), Position(lon: -179.99, lat: -0.01), Position(lon: -179.99, lat: 0.01),
            Position(lon: 179.99, lat: 0.01), Position(lon: 179.99, lat: -0.01),
        ]
        let other = square(lat: 0.5, lon: 179.5, side: 1000)
        let geometry = GeoJSONGeometry.multiPolygon([[dateline], [other]])
        let zone = ZoneDefinition(id: "m", name: "M", fences: [FenceDefinition(id: "f", geometry: geometry)])
        var trip = try Scenario(zones: [zone])
        let events = trip.at(0, lat: 0, lon: -179.995)
        #expect(events.first?.fence?.geometry == geometry)
    }

    @Test func circleAcrossTheAntimeridian() throws {
        var trip = try Scenario(zones: [circleZone("c", lat: 0, lon: 179.9995, radius: 200)])
        #expect(summary(trip.at(0, lat: 0, lon: -179.9995)) == ["checkin c"])
    }

    /// The tangent-plane metric against the great-circle distance, for the bound in `PlanarMetric`.
    @Test func planarMetricErrorBound() async {
        await propertyCheck(
            count: 300, input: Gen.double(in: -80...80), Gen.double(in: 0..<360), Gen.double(in: 1...50_000)
        ) { lat, bearing, distance in
            let q = Earth.destination(lat: lat, lon: 0, bearing: bearing, distance: distance)
            let planar = PlanarMetric(lat: lat).distance(ax: 0, ay: lat, bx: q.lon, by: q.lat)
            let bound = distance * (distance / Earth.radius) * (abs(tan(lat * .pi / 180)) + 1) / 2 + 1e-6
            #expect(abs(planar - distance) <= bound, "lat \(lat) bearing \(bearing) d \(distance)")
        }
    }
}
