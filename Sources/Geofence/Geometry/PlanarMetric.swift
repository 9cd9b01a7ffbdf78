import Foundation

/// Metres in the plane tangent to the sphere at a reference latitude:
/// x = Δlon · cos(lat₀) · m, y = Δlat · m, with m metres per degree.
///
/// The map is affine in longitude/latitude, so straight GeoJSON edges stay straight
/// and containment is unaffected; only lengths carry an error. Against the
/// great-circle distance, a length `d` measured from a point at the reference
/// latitude φ₀ is off by at most about d · (d / R) · (|tan φ₀| + 1) / 2 (the
/// meridians converge by tan φ₀ per radian of latitude). For the distances the
/// engine measures this way (exit buffers and depths inside fences, up to ~50 km)
/// that is: 20 m → under a millimetre; 1 km at 60° → 0.2 m; 50 km at 60° → about
/// 1 % of the length. `PolygonTests.planarMetricErrorBound` checks the bound against
/// haversine for latitudes up to 80° and lengths up to 50 km.
struct PlanarMetric: Sendable {
    let kx: Double
    let ky: Double

    init(lat: Double) {
        ky = Earth.metresPerDegree
        kx = Earth.metresPerDegree * cos(Earth.radians(lat))
    }

    func distance(ax: Double, ay: Double, bx: Double, by: Double) -> Double {
        let dx = (bx - ax) * kx
        let dy = (by - ay) * ky
        return (dx * dx + dy * dy).squareRoot()
    }

    /// Distance from p to the segment ab, all in degrees (longitudes in one unwrapped range).
    func distanceToSegment(px: Double, py: Double, ax: Double, ay: Double, bx: Double, by: Double) -> Double {
        let ux = (bx - ax) * kx
        let uy = (by - ay) * ky
        let wx = (px - ax) * kx
        let wy = (py - ay) * ky
        let length2 = ux * ux + uy * uy
        var t = length2 > 0 ? (wx * ux + wy * uy) / length2 : 0
        t = min(1, max(0, t))
        let dx = wx - t * ux
        let dy = wy - t * uy
        return (dx * dx + dy * dy).squareRoot()
    }
}
