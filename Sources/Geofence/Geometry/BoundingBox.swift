/// A longitude/latitude box that may straddle the antimeridian: it starts at
/// `minLon` and extends `lonSpan` degrees east, so 179.9 + 0.2 covers -179.9.
struct BoundingBox: Sendable, Equatable {
    var minLon: Double
    var minLat: Double
    var lonSpan: Double
    var maxLat: Double

    init(minLon: Double, minLat: Double, lonSpan: Double, maxLat: Double) {
        self.minLon = minLon
        self.minLat = minLat
        self.lonSpan = lonSpan
        self.maxLat = maxLat
    }

    /// The box around points whose longitudes are already unwrapped into one
    /// continuous range (no jump of 360 between neighbours).
    init(unwrappedMinLon: Double, maxLon: Double, minLat: Double, maxLat: Double) {
        self.init(
            minLon: Earth.wrapLongitude(unwrappedMinLon), minLat: minLat,
            lonSpan: min(360, maxLon - unwrappedMinLon), maxLat: maxLat)
    }

    func contains(lon: Double, lat: Double) -> Bool {
        guard lat >= minLat, lat <= maxLat else { return false }
        var d = lon - minLon
        if d < 0 { d += 360 }
        return d <= lonSpan
    }

    /// Whether a box given by an unwrapped longitude range overlaps this one.
    func intersects(_ other: BoundingBox) -> Bool {
        guard other.maxLat >= minLat, other.minLat <= maxLat else { return false }
        if lonSpan >= 360 || other.lonSpan >= 360 { return true }
        var d = other.minLon - minLon
        if d < 0 { d += 360 }
        if d <= lonSpan { return true }
        var e = minLon - other.minLon
        if e < 0 { e += 360 }
        return e <= other.lonSpan
    }

    /// Widened by `metres` on every side; the whole circle of longitude when that reaches a pole.
    func expanded(byMetres metres: Double) -> BoundingBox {
        let dLat = metres / Earth.metresPerDegree
        let newMinLat = max(-90, minLat - dLat)
        let newMaxLat = min(90, maxLat + dLat)
        let maxAbsLat = max(abs(minLat), abs(maxLat))
        // A little slack keeps the box conservative against rounding in the callers' formulas.
        guard let dLon = Earth.longitudeSpan(metres: metres, maxAbsLat: maxAbsLat), lonSpan + 2 * dLon < 359 else {
            return BoundingBox(minLon: -180, minLat: newMinLat, lonSpan: 360, maxLat: newMaxLat)
        }
        let slack = 1e-9
        return BoundingBox(
            minLon: Earth.wrapLongitude(minLon - dLon * 1.0001 - slack), minLat: newMinLat - slack,
            lonSpan: lonSpan + 2 * dLon * 1.0001 + 2 * slack, maxLat: newMaxLat + slack)
    }

    /// The smallest box holding both (taking the shorter way round in longitude).
    func union(_ other: BoundingBox) -> BoundingBox {
        if lonSpan >= 360 || other.lonSpan >= 360 {
            return BoundingBox(
                minLon: -180, minLat: min(minLat, other.minLat), lonSpan: 360, maxLat: max(maxLat, other.maxLat))
        }
        var otherStart = other.minLon - minLon
        if otherStart < 0 { otherStart += 360 }
        // Option 1: start at self.minLon and extend east to cover other.
        let eastEnd = max(lonSpan, otherStart + other.lonSpan)
        // Option 2: start at other.minLon and extend east to cover self.
        var selfStart = minLon - other.minLon
        if selfStart < 0 { selfStart += 360 }
        let westEnd = max(other.lonSpan, selfStart + lonSpan)
        let lat0 = min(minLat, other.minLat)
        let lat1 = max(maxLat, other.maxLat)
        if eastEnd <= westEnd {
            return BoundingBox(minLon: minLon, minLat: lat0, lonSpan: min(360, eastEnd), maxLat: lat1)
        }
        return BoundingBox(minLon: other.minLon, minLat: lat0, lonSpan: min(360, westEnd), maxLat: lat1)
    }

    /// The box of a spherical cap, conservative (slightly larger, never smaller).
    static func around(lat: Double, lon: Double, radius: Double) -> BoundingBox {
        BoundingBox(minLon: Earth.wrapLongitude(lon), minLat: lat, lonSpan: 0, maxLat: lat).expanded(byMetres: radius)
    }
}
