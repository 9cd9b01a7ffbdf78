import Foundation
import Geofence
import Shared

/// Random zones of every kind (circles, polygons with and without holes, multipolygons,
/// geolines, beacons) with every rule a zone can carry, and a device wandering among them,
/// built from a seed so that a failing trip can be rebuilt.
struct RandomTrip {
    static let centre = Position(lon: 2.3522, lat: 48.8566)
    static let uuid = "F7826DA6-4FA2-4E98-8024-BC5B71E0893E"
    /// Trips start on Monday 2026-06-01 at 10:00 UTC: far from any change of daylight saving time.
    static let start = 1_780_308_000.0

    var zones: [ZoneDefinition] = []
    /// Where the device goes to visit each zone, and how far around it it strays.
    var places: [(at: Position, spread: Double)] = []
    /// Where each beacon hangs, by beacon id.
    var beaconPlaces: [String: Position] = [:]
    /// The engine's settings: the defaults for most trips, others for some.
    var configuration = EngineConfiguration()
    var rng: SplitMix

    init(seed: UInt64) {
        rng = SplitMix(seed: seed)
        if Int.random(in: 0..<3, using: &rng) == 0 {
            configuration = EngineConfiguration(
                maxAccuracy: [100, 50, 200].randomElement(using: &rng)!, exitBuffer: [20, 0, 50].randomElement(using: &rng)!,
                staleAfter: [7_200, 1_800].randomElement(using: &rng)!, maxCrossingGap: [600, 120, 1_200].randomElement(using: &rng)!,
                beaconExitAfter: [60, 30, 200].randomElement(using: &rng)!, restartTolerance: [50, 0, 150].randomElement(using: &rng)!)
        }
        let count = Int.random(in: 8...12, using: &rng)
        for index in 0..<count { addZone(index) }
    }

    // MARK: Zones

    mutating func addZone(_ index: Int) {
        let id = "z\(index)"
        let at = ReferenceGeometry.move(
            Self.centre, bearing: Double.random(in: 0..<360, using: &rng), metres: Double.random(in: 0...1_500, using: &rng))
        var fences: [FenceDefinition] = []
        var beacons: [BeaconDefinition] = []
        var spread = 0.0
        // The first zones cover every kind; later ones are drawn at random.
        let kind = index < 5 ? index : Int.random(in: 0..<6, using: &rng)
        switch kind {
        case 0:
            let radius = Double.random(in: 60...250, using: &rng)
            fences.append(FenceDefinition(id: "\(id)-circle", geometry: .point(at), radius: radius))
            spread = radius * 1.4
        case 1:
            let size = Double.random(in: 120...400, using: &rng)
            fences.append(FenceDefinition(id: "\(id)-area", geometry: randomArea(at, size: size)))
            spread = size
        case 2:
            let length = Double.random(in: 200...600, using: &rng)
            fences.append(FenceDefinition(id: "\(id)-line", geometry: .lineString(randomLine(at, length: length))))
            if Int.random(in: 0..<3, using: &rng) == 0 {
                let far = ReferenceGeometry.move(at, bearing: Double.random(in: 0..<360, using: &rng), metres: length / 2)
                fences.append(FenceDefinition(id: "\(id)-line2", geometry: .lineString(randomLine(far, length: length))))
            }
            spread = length
        case 3:
            beacons = randomBeacons(id, zoneIndex: index, at: at)
            if Bool.random(using: &rng) {
                fences.append(FenceDefinition(id: "\(id)-circle", geometry: .point(at), radius: Double.random(in: 40...120, using: &rng)))
            }
            spread = 200
        case 4:
            // A circle and a geoline in one zone: presence and crossings in the same zone.
            let radius = Double.random(in: 60...150, using: &rng)
            let lineAt = ReferenceGeometry.move(at, bearing: Double.random(in: 0..<360, using: &rng), metres: radius * 1.2)
            fences.append(FenceDefinition(id: "\(id)-circle", geometry: .point(at), radius: radius))
            fences.append(FenceDefinition(id: "\(id)-line", geometry: .lineString(randomLine(lineAt, length: 400))))
            spread = radius * 2.5
        default:
            let radius = Double.random(in: 60...200, using: &rng)
            let other = ReferenceGeometry.move(at, bearing: Double.random(in: 0..<360, using: &rng), metres: radius * 1.5)
            fences.append(FenceDefinition(id: "\(id)-circle", geometry: .point(at), radius: radius))
            fences.append(FenceDefinition(id: "\(id)-area", geometry: randomArea(other, size: radius * 2)))
            spread = radius * 3
        }
        var zone = ZoneDefinition(
            id: id, name: "Zone \(index)", minimumRetriggerTime: [0, 120, 600, 1_800].randomElement(using: &rng)!,
            checkOutEnabled: Int.random(in: 0..<5, using: &rng) < 3, enabled: Int.random(in: 0..<8, using: &rng) > 0,
            fences: fences, beacons: beacons)
        if Int.random(in: 0..<5, using: &rng) == 0 { zone.activeSchedule = randomSchedule() }
        if Int.random(in: 0..<2, using: &rng) == 0 { zone.conditions = randomConditions(index: index) }
        zones.append(zone)
        places.append((at, spread))
    }

    /// A rectangle, a star-shaped outline, a square with a hole, or two squares.
    mutating func randomArea(_ at: Position, size: Double) -> GeoJSONGeometry {
        func square(_ centre: Position, _ side: Double) -> [Position] {
            let corners = [(-1.0, -1.0), (1, -1), (1, 1), (-1, 1), (-1, -1)]
            return corners.map { ReferenceGeometry.unplane(x: $0.0 * side / 2, y: $0.1 * side / 2, around: centre) }
        }
        switch Int.random(in: 0..<4, using: &rng) {
        case 0:
            let width = size, height = size * Double.random(in: 0.5...1, using: &rng)
            let corners = [(-1.0, -1.0), (1, -1), (1, 1), (-1, 1), (-1, -1)]
            return .polygon([corners.map { ReferenceGeometry.unplane(x: $0.0 * width / 2, y: $0.1 * height / 2, around: at) }])
        case 1:
            let vertices = Int.random(in: 5...9, using: &rng)
            var ring = (0..<vertices).map { k in
                ReferenceGeometry.move(
                    at, bearing: 360 * Double(k) / Double(vertices), metres: size / 2 * Double.random(in: 0.6...1, using: &rng))
            }
            ring.append(ring[0])
            return .polygon([ring])
        case 2:
            return .polygon([square(at, size), Array(square(at, size * 0.35).reversed())])
        default:
            let other = ReferenceGeometry.move(at, bearing: 90, metres: size * 0.9)
            return .multiPolygon([[square(at, size * 0.6)], [square(other, size * 0.5)]])
        }
    }

    /// Two or three points, the middle one bent aside.
    mutating func randomLine(_ at: Position, length: Double) -> [Position] {
        let heading = Double.random(in: 0..<180, using: &rng)
        let a = ReferenceGeometry.move(at, bearing: heading + 180, metres: length / 2)
        let b = ReferenceGeometry.move(at, bearing: heading, metres: length / 2)
        guard Bool.random(using: &rng) else { return [a, b] }
        let bend = ReferenceGeometry.move(at, bearing: heading + 90, metres: Double.random(in: -length / 4...length / 4, using: &rng))
        return [a, bend, b]
    }

    mutating func randomBeacons(_ id: String, zoneIndex: Int, at: Position) -> [BeaconDefinition] {
        var beacons: [BeaconDefinition] = []
        for k in 0..<Int.random(in: 1...2, using: &rng) {
            let threshold = Int.random(in: -85 ... -70, using: &rng)
            var beacon =
                Bool.random(using: &rng)
                ? BeaconDefinition(id: "\(id)-beacon\(k)", uuid: Self.uuid, major: zoneIndex, minor: k, rssiThreshold: threshold)
                : BeaconDefinition(id: "\(id)-beacon\(k)", eddystoneId: "edd1e\(zoneIndex)\(k)", rssiThreshold: threshold)
            switch Int.random(in: 0..<5, using: &rng) {
            case 0 where beacon.uuid != nil:
                // Any minor of the major.
                beacon.minor = nil
            case 1:
                // The same beacon as another zone's: one sighting concerns both zones.
                if let other = zones.lazy.flatMap(\.beacons).randomElement(using: &rng) {
                    (beacon.uuid, beacon.major, beacon.minor, beacon.eddystoneId) = (
                        other.uuid, other.major, other.minor, other.eddystoneId
                    )
                }
            default: break
            }
            beacons.append(beacon)
            beaconPlaces[beacon.id] = ReferenceGeometry.move(at, bearing: Double(k) * 120, metres: Double(k) * 40)
        }
        return beacons
    }

    mutating func randomSchedule() -> ActiveSchedule {
        let timeZone = ["UTC", "Europe/Paris", "America/New_York", "Asia/Tokyo"].randomElement(using: &rng)!
        let startHour = Int.random(in: 0..<24, using: &rng)
        let endHour = (startHour + Int.random(in: 1...8, using: &rng)) % 24
        let days = Weekday.allCases.filter { _ in Int.random(in: 0..<3, using: &rng) > 0 }
        let start = String(format: "%02d:%@", startHour, Bool.random(using: &rng) ? "00" : "30")
        return ActiveSchedule(
            timeZone: timeZone, windows: [ScheduleWindow(days: days, start: start, end: String(format: "%02d:00", endHour))])
    }

    mutating func randomConditions(index: Int) -> ZoneConditions {
        var conditions = ZoneConditions()
        repeat {
            switch Int.random(in: 0..<6, using: &rng) {
            case 0:
                if Bool.random(using: &rng) { conditions.minSpeed = Double.random(in: 0.5...3, using: &rng) }
                if conditions.minSpeed == nil || Bool.random(using: &rng) { conditions.maxSpeed = Double.random(in: 4...12, using: &rng) }
            case 1:
                let from = Double.random(in: 0..<360, using: &rng)
                conditions.bearing = BearingRange(
                    from: from, to: (from + Double.random(in: 60...200, using: &rng)).truncatingRemainder(dividingBy: 360))
            case 2, 3:
                conditions.percentageCrossed = Double.random(in: 30...80, using: &rng)
            default:
                guard index > 0 else { continue }
                conditions.sequential = SequentialCondition(
                    afterZoneId: "z\(Int.random(in: 0..<index, using: &rng))", withinSeconds: Double.random(in: 60...600, using: &rng))
            }
        } while conditions == ZoneConditions() || Int.random(in: 0..<4, using: &rng) == 0
        return conditions
    }

    // MARK: The device

    /// Where the device is, where it is heading, and what its next fix will be like.
    struct Walk {
        var at = RandomTrip.centre
        var target = RandomTrip.centre
        var time = RandomTrip.start
        var inaccurate = false
        var sent: [Fix] = []
    }

    /// The next fix of the walk: a step towards the current target (a zone's place, now and then
    /// anywhere), with gaps, inaccurate runs, restart-mode fixes, beacon sightings, and now and
    /// then a resent or a late fix. `isAmbiguous` moves positions off the rules' edges, where
    /// rounding alone would decide.
    mutating func nextFix(_ walk: inout Walk, number: Int, isAmbiguous: (Position) -> Bool) -> Fix {
        if walk.sent.count > 3, Int.random(in: 0..<40, using: &rng) == 0 {
            return walk.sent[walk.sent.count - Int.random(in: 1...3, using: &rng)]
        }
        if ReferenceGeometry.distance(walk.at, walk.target) < 30 || Int.random(in: 0..<25, using: &rng) == 0 {
            if Int.random(in: 0..<4, using: &rng) == 0 {
                walk.target = ReferenceGeometry.move(
                    Self.centre, bearing: Double.random(in: 0..<360, using: &rng), metres: Double.random(in: 0...1_800, using: &rng))
            } else {
                let place = places.randomElement(using: &rng)!
                walk.target = ReferenceGeometry.move(
                    place.at, bearing: Double.random(in: 0..<360, using: &rng), metres: Double.random(in: 0...place.spread, using: &rng))
            }
        }
        let heading = bearing(from: walk.at, to: walk.target)
        let step = min(Double.random(in: 15...140, using: &rng), ReferenceGeometry.distance(walk.at, walk.target))
        var next = ReferenceGeometry.move(walk.at, bearing: heading + Double.random(in: -20...20, using: &rng), metres: step)
        if Int.random(in: 0..<25, using: &rng) == 0 {
            // A long jump, as after a drive with the app asleep: the path crosses whatever lies between.
            next = walk.target
        }
        for _ in 0..<40 where isAmbiguous(next) {
            next = ReferenceGeometry.move(next, bearing: Double.random(in: 0..<360, using: &rng), metres: 2.5)
        }
        walk.at = next

        var time = walk.time + Double(Int.random(in: 5...90, using: &rng))
        switch Int.random(in: 0..<15, using: &rng) {
        case 0: time = walk.time
        case 1..<5: time += Double.random(in: 0..<1, using: &rng)
        default: break
        }
        switch Int.random(in: 0..<200, using: &rng) {
        case 0..<14: time += Double(Int.random(in: 600...1_500, using: &rng))
        case 14: time += Double(Int.random(in: 7_200...9_000, using: &rng))
        default: break
        }
        let late = Int.random(in: 0..<35, using: &rng) == 0
        if late { time = walk.time - Double(Int.random(in: 1...120, using: &rng)) } else { walk.time = time }

        walk.inaccurate = Int.random(in: 0..<100, using: &rng) < (walk.inaccurate ? 60 : 8)
        let accuracy: Double? =
            walk.inaccurate
            ? Double.random(in: 101...400, using: &rng)
            : Int.random(in: 0..<20, using: &rng) == 0 ? nil : Double.random(in: 3...60, using: &rng)
        var sightings: [BeaconSighting] = []
        for zone in zones {
            for beacon in zone.beacons {
                let distance = ReferenceGeometry.distance(next, beaconPlaces[beacon.id]!)
                guard distance < 160 else { continue }
                let rssi = Int(-45 - distance * 0.35) + Int.random(in: -8...8, using: &rng)
                sightings.append(
                    BeaconSighting(uuid: beacon.uuid, major: beacon.major, minor: beacon.minor, eddystoneId: beacon.eddystoneId, rssi: rssi)
                )
            }
        }
        if Int.random(in: 0..<10, using: &rng) == 0 { sightings.append(BeaconSighting(uuid: Self.uuid, major: 99, minor: 1, rssi: -40)) }
        if var again = sightings.randomElement(using: &rng), Int.random(in: 0..<8, using: &rng) == 0 {
            // The same beacon heard twice in one fix, once nearer.
            again.rssi += Int.random(in: -12...12, using: &rng)
            sightings.append(again)
        }
        sightings.shuffle(using: &rng)
        let fix = Fix(
            projectId: "p1", deviceId: "d1", timestamp: Date(timeIntervalSince1970: time), lat: next.lat, lon: next.lon,
            accuracy: accuracy, speed: Int.random(in: 0..<4, using: &rng) == 0 ? nil : Double.random(in: 0...15, using: &rng),
            bearing: Int.random(in: 0..<5, using: &rng) == 0 ? nil : Double.random(in: 0..<360, using: &rng),
            mode: Int.random(in: 0..<14, using: &rng) == 0 ? .restart : .normal, beacons: sightings, fixId: "fix-\(number)")
        if !late { walk.sent.append(fix) }
        return fix
    }

    func bearing(from a: Position, to b: Position) -> Double {
        let p = ReferenceGeometry.plane(b, around: a)
        return atan2(p.x, p.y) * 180 / .pi
    }
}

extension ReferenceRules {
    /// Whether a fix here would lie within `margin` metres of an edge the rules draw (a fence,
    /// its exit buffer, its widened enclosing circle, a geoline or the path to it, the depth a
    /// percentage condition asks for), where the engine's and the reference's roundings differ.
    func isAmbiguous(_ p: Position, margin: Double = 1) -> Bool {
        let buffer = configuration.exitBuffer
        for zone in zones {
            for fence in zone.fences {
                let toCentre = ReferenceGeometry.distance(fence.enclosing.centre, p)
                let widened = fence.enclosing.radius + configuration.restartTolerance
                switch fence.shape {
                case .circle(let centre, let radius):
                    let d = ReferenceGeometry.distance(centre, p)
                    if abs(d - radius) < margin || abs(d - radius - buffer) < margin { return true }
                case .area(let parts):
                    let d = ReferenceGeometry.distanceToEdges(parts, p)
                    if d < margin || abs(d - buffer) < margin { return true }
                    if abs(toCentre - fence.enclosing.radius) < margin { return true }
                case .line(let points):
                    for k in 0..<(points.count - 1) where ReferenceGeometry.distanceToSegment(p, points[k], points[k + 1]) < margin {
                        return true
                    }
                    if let track, points.contains(where: { ReferenceGeometry.distanceToSegment($0, track.at, p) < margin }) { return true }
                    continue
                }
                if abs(toCentre - widened) < margin || abs(toCentre - widened - buffer) < margin { return true }
                if let required = zone.definition.conditions?.percentageCrossed, isInside(fence, p, restart: false),
                    abs(percentageCrossed(fence, p) - required) < 3
                {
                    return true
                }
            }
        }
        return false
    }
}
