import Foundation

/// The spherical Earth the engine measures on.
///
/// A sphere of the mean radius is within 0.5 % of WGS84 distances everywhere, far
/// below the accuracy of any phone fix, and keeps every test a closed formula.
public enum Earth {
    /// Mean radius (IUGG), metres.
    public static let radius = 6_371_008.8
    /// Metres per degree along a meridian.
    public static let metresPerDegree = radius * Double.pi / 180

    @inlinable public static func radians(_ degrees: Double) -> Double { degrees * (Double.pi / 180) }
    @inlinable public static func degrees(_ radians: Double) -> Double { radians * (180 / Double.pi) }

    /// Great-circle distance in metres (haversine, well conditioned for the short
    /// distances geofencing is about).
    @inlinable
    public static func distance(lat1: Double, lon1: Double, lat2: Double, lon2: Double) -> Double {
        let phi1 = radians(lat1)
        let phi2 = radians(lat2)
        let dPhi = phi2 - phi1
        let dLambda = radians(lon2 - lon1)
        let s1 = sin(dPhi / 2)
        let s2 = sin(dLambda / 2)
        let h = s1 * s1 + cos(phi1) * cos(phi2) * s2 * s2
        return 2 * radius * asin(min(1, h.squareRoot()))
    }

    /// The point `distance` metres from a start along an initial bearing (degrees).
    public static func destination(lat: Double, lon: Double, bearing: Double, distance: Double) -> (lat: Double, lon: Double) {
        let delta = distance / radius
        let theta = radians(bearing)
        let phi1 = radians(lat)
        let lambda1 = radians(lon)
        let sinPhi2 = sin(phi1) * cos(delta) + cos(phi1) * sin(delta) * cos(theta)
        let phi2 = asin(max(-1, min(1, sinPhi2)))
        let lambda2 = lambda1 + atan2(sin(theta) * sin(delta) * cos(phi1), cos(delta) - sin(phi1) * sinPhi2)
        return (degrees(phi2), wrapLongitude(degrees(lambda2)))
    }

    /// Longitude folded into [-180, 180).
    @inlinable
    public static func wrapLongitude(_ lon: Double) -> Double {
        var value = lon
        if value >= 180 || value < -180 {
            value = (value + 180).truncatingRemainder(dividingBy: 360)
            if value < 0 { value += 360 }
            value -= 180
        }
        return value
    }

    /// `lon` moved by whole turns to lie within 180° of `previous`, so that a path
    /// crossing the antimeridian stays continuous (179 then -179 becomes 179 then 181).
    @inlinable
    public static func unwrapLongitude(_ lon: Double, after previous: Double?) -> Double {
        guard let previous else { return lon }
        var value = lon
        while value - previous > 180 { value -= 360 }
        while previous - value > 180 { value += 360 }
        return value
    }

    /// Degrees of longitude that span `metres` at every latitude up to `maxAbsLat`;
    /// nil when that reaches a pole and only the whole circle of longitude is safe.
    @inlinable
    public static func longitudeSpan(metres: Double, maxAbsLat: Double) -> Double? {
        let phi = maxAbsLat + metres / metresPerDegree
        guard phi < 89 else { return nil }
        return metres / (metresPerDegree * cos(radians(phi)))
    }
}

/// A point as a unit vector, so that "within r metres of a centre" becomes a chord
/// comparison: three multiplications instead of five trigonometric calls per fence.
@usableFromInline
struct UnitVector: BitwiseCopyable, Sendable {
    @usableFromInline var x: Double
    @usableFromInline var y: Double
    @usableFromInline var z: Double

    @inlinable
    init(lat: Double, lon: Double) {
        let phi = Earth.radians(lat)
        let lambda = Earth.radians(lon)
        let c = cos(phi)
        x = c * cos(lambda)
        y = c * sin(lambda)
        z = sin(phi)
    }

    @inlinable
    func chordSquared(to other: UnitVector) -> Double {
        let dx = x - other.x
        let dy = y - other.y
        let dz = z - other.z
        return dx * dx + dy * dy + dz * dz
    }

    /// The squared chord of a great-circle distance in metres.
    @inlinable
    static func chordSquared(ofDistance metres: Double) -> Double {
        let angle = min(metres / Earth.radius, Double.pi)
        let chord = 2 * sin(angle / 2)
        return chord * chord
    }
}
