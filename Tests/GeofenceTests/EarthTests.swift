import Foundation
import Testing

@testable import Geofence

@Suite struct EarthTests {
    @Test func distanceOfOneDegreeOfLatitude() {
        let d = Earth.distance(lat1: 0, lon1: 0, lat2: 1, lon2: 0)
        #expect(abs(d - Earth.metresPerDegree) < 1e-6)
    }

    @Test func destinationRoundTrips() {
        let p = Earth.destination(lat: 48.85, lon: 2.35, bearing: 37, distance: 1234)
        #expect(abs(Earth.distance(lat1: 48.85, lon1: 2.35, lat2: p.lat, lon2: p.lon) - 1234) < 1e-6)
    }
}
