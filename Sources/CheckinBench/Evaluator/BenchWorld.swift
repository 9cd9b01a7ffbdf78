import Foundation
import Shared

/// A generated world for the evaluator benchmark: circle fences spread evenly over a
/// square (one zone each, check-out enabled) and devices that walk through them.
///
/// Each device walks legs of `fixesPerLeg` fixes, 5 s and 7 m apart (1.4 m/s), each leg a
/// straight line through the centre of a fence picked at random, starting 400 m before it;
/// the next leg starts at another fence. So every leg enters and leaves at least one fence
/// (a check-in and a check-out) and crosses others now and then: about as many events per
/// fix as a crowd walking through a city's zones decides. Everything follows from `seed`.
struct BenchWorld: Sendable {
    static let secondsBetweenFixes = 5.0
    static let metresBetweenFixes = 7.0
    static let legLengthMetres = 800.0
    static let fixesPerLeg = Int(legLengthMetres / metresBetweenFixes)

    let fences: Int
    let devices: Int
    let sideKilometres: Double
    let seed: UInt64
    let centre = Position(lon: 145.0, lat: -37.0)

    /// Where fence `index` is, and its radius in metres.
    func fence(_ index: Int) -> (centre: Position, radius: Double) {
        var random = SplitMix64(seed: seed ^ UInt64(index) &* 0x9E37_79B9_7F4A_7C15)
        let north = (random.unit() - 0.5) * sideKilometres * 1000
        let east = (random.unit() - 0.5) * sideKilometres * 1000
        return (offset(centre, north: north, east: east), 60 + random.unit() * 90)
    }

    var zones: ZonesDocument {
        ZonesDocument(
            zones: (0..<fences).map { index in
                let (centre, radius) = fence(index)
                return ZoneDefinition(
                    id: "zone-\(index)", name: "Zone \(index)", checkOutEnabled: true,
                    fences: [FenceDefinition(id: "fence-\(index)", geometry: .point(centre), radius: radius)])
            })
    }

    /// The `step`th fix of `device` (steps count from 0), taken at `origin + step * 5 s`.
    func fix(device: Int, step: Int, project: String, origin: Date) -> Fix {
        let leg = step / Self.fixesPerLeg
        var random = SplitMix64(seed: seed &+ UInt64(device) &* 0x1000_0001 &+ UInt64(leg) &* 0x9E37_79B9)
        let target = fence(Int(random.next() % UInt64(fences))).centre
        let bearing = random.unit() * 2 * .pi
        let along = Double(step % Self.fixesPerLeg) * Self.metresBetweenFixes - Self.legLengthMetres / 2
        let position = offset(target, north: cos(bearing) * along, east: sin(bearing) * along)
        return Fix(
            projectId: project, deviceId: "bench-device-\(device)",
            timestamp: origin.addingTimeInterval(Double(step) * Self.secondsBetweenFixes), lat: position.lat, lon: position.lon,
            accuracy: 10, speed: 1.4, bearing: (bearing * 180 / .pi).truncatingRemainder(dividingBy: 360),
            fixId: "bench-\(device)-\(step)")
    }

    private func offset(_ position: Position, north: Double, east: Double) -> Position {
        let metresPerDegree = 111_320.0
        return Position(
            lon: position.lon + east / (metresPerDegree * cos(position.lat * .pi / 180)),
            lat: position.lat + north / metresPerDegree)
    }
}

/// A small, fast, seedable generator (SplitMix64), so that a world is the same on every run.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A number in [0, 1).
    mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }
}
