import Foundation
import Geofence
import Shared

/// Synthetic but realistic workloads for the engine benchmarks: fences scattered over
/// a square region at a given density, and devices walking through it.
public enum World {
    /// A fast deterministic generator (SplitMix64): the same world on every run.
    public struct Random: RandomNumberGenerator {
        var state: UInt64
        public init(seed: UInt64) { state = seed }
        public mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    /// A region: a square of `side` metres centred on (lat, lon).
    public struct Region: Sendable {
        public var lat: Double
        public var lon: Double
        public var side: Double
        public init(lat: Double, lon: Double, side: Double) {
            self.lat = lat
            self.lon = lon
            self.side = side
        }

        /// The point x metres east and y metres north of the centre (local tangent plane).
        public func point(x: Double, y: Double) -> (lat: Double, lon: Double) {
            let m = Earth.metresPerDegree
            return (lat + y / m, lon + x / (m * cos(lat * .pi / 180)))
        }
    }

    /// `count` single-fence zones: circles, and polygons of 4 to 200 vertices (log-uniform,
    /// so simple shapes dominate as in real zone sets), sized in `radius` metres.
    public static func zones(
        count: Int, in region: Region, radius: ClosedRange<Double>, polygonShare: Double, seed: UInt64
    ) -> [ZoneDefinition] {
        var rng = Random(seed: seed)
        var zones: [ZoneDefinition] = []
        zones.reserveCapacity(count)
        let half = region.side / 2
        for i in 0..<count {
            let x = Double.random(in: -half...half, using: &rng)
            let y = Double.random(in: -half...half, using: &rng)
            let r = Double.random(in: radius, using: &rng)
            let geometry: GeoJSONGeometry
            var fenceRadius: Double? = nil
            if Double.random(in: 0..<1, using: &rng) < polygonShare {
                let vertices = Int(exp(Double.random(in: log(4.0)...log(200.0), using: &rng)))
                geometry = .polygon([outline(in: region, x: x, y: y, radius: r, vertices: vertices, rng: &rng)])
            } else {
                let centre = region.point(x: x, y: y)
                geometry = .point(Position(lon: centre.lon, lat: centre.lat))
                fenceRadius = r
            }
            zones.append(
                ZoneDefinition(
                    id: "z\(i)", name: "Zone \(i)", checkOutEnabled: i % 2 == 0,
                    fences: [FenceDefinition(id: "f\(i)", geometry: geometry, radius: fenceRadius)]))
        }
        return zones
    }

    /// A star-shaped outline (vertices at increasing angles), so always a simple polygon.
    public static func outline(
        in region: Region, x: Double, y: Double, radius: Double, vertices: Int, rng: inout Random
    ) -> [Position] {
        var ring: [Position] = []
        ring.reserveCapacity(vertices + 1)
        let phase = Double.random(in: 0..<(2 * .pi), using: &rng)
        for k in 0..<vertices {
            let angle = phase + 2 * .pi * Double(k) / Double(vertices)
            let r = radius * (0.85 + 0.15 * sin(angle * 5))
            let p = region.point(x: x + r * cos(angle), y: y + r * sin(angle))
            ring.append(Position(lon: p.lon, lat: p.lat))
        }
        ring.append(ring[0])
        return ring
    }

    /// Fixes of `devices` devices walking (about 1.5 m/s, a fix every 10 s) through the region.
    public static func walks(
        devices: Int, fixesPerDevice: Int, in region: Region, projectId: String, seed: UInt64
    ) -> (fixes: [Fix], device: [Int]) {
        var rng = Random(seed: seed)
        let half = region.side / 2
        var positions = (0..<devices).map { _ in
            (
                x: Double.random(in: -half...half, using: &rng), y: Double.random(in: -half...half, using: &rng),
                heading: Double.random(in: 0..<(2 * .pi), using: &rng)
            )
        }
        let start = Date(timeIntervalSince1970: 1_780_308_000)
        var fixes: [Fix] = []
        var device: [Int] = []
        fixes.reserveCapacity(devices * fixesPerDevice)
        for step in 0..<fixesPerDevice {
            for d in 0..<devices {
                positions[d].heading += Double.random(in: -0.4...0.4, using: &rng)
                positions[d].x = max(-half, min(half, positions[d].x + 15 * cos(positions[d].heading)))
                positions[d].y = max(-half, min(half, positions[d].y + 15 * sin(positions[d].heading)))
                let p = region.point(x: positions[d].x, y: positions[d].y)
                fixes.append(
                    Fix(
                        projectId: projectId, deviceId: "d\(d)", timestamp: start.addingTimeInterval(Double(step) * 10),
                        lat: p.lat, lon: p.lon, accuracy: 10, speed: 1.5, bearing: 90, fixId: "s\(step)"))
                device.append(d)
            }
        }
        return (fixes, device)
    }

    /// Resident set size of this process in bytes (Linux), for the memory figures.
    public static func residentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}

/// Many devices' fixes replayed against one engine, round after round; each round
/// moves the clock on so that no fix is ever late or a duplicate of the last round.
public final class EvaluationWorkload: @unchecked Sendable {
    public let engine: GeofenceEngine
    let fixes: [Fix]
    let device: [Int]
    var states: [DeviceState]
    var next = 0
    var round = 0
    var roundLength: TimeInterval
    public private(set) var events = 0

    public init(zones: [ZoneDefinition], region: World.Region, devices: Int, fixesPerDevice: Int) throws {
        engine = try GeofenceEngine(projects: [ProjectZones(projectId: "bench", zones: zones)])
        (fixes, device) = World.walks(
            devices: devices, fixesPerDevice: fixesPerDevice, in: region, projectId: "bench", seed: 42)
        states = Array(repeating: DeviceState(), count: devices)
        roundLength = Double(fixesPerDevice) * 10
    }

    /// Evaluates the next fix; returns the number of events it produced.
    @inline(__always)
    public func evaluateNext() -> Int {
        var fix = fixes[next]
        if round > 0 { fix.timestamp += Double(round) * roundLength }
        let evaluation = engine.evaluate(fix, state: &states[device[next]])
        next += 1
        if next == fixes.count {
            next = 0
            round += 1
        }
        events += evaluation.events.count
        return evaluation.events.count
    }
}
