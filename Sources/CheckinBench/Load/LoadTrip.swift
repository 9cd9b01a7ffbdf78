import Foundation
import Geofence
import Shared

/// The fixes the load tool sends: fix `index` is step `index / devices` of device
/// `index % devices`, so that an event's device and fix time name the fix that decided it.
///
/// Two layouts:
/// - ``Layout/exampleZones``: each device walks east at about 1.8 m/s (a fix every 5 s)
///   along Flinders Street, through the example zones (`examples/zones.json`: the station,
///   the bridge's gate line, the coffee kiosk). Devices start up to 1.2 km apart along the
///   street and up to 45 m apart across it. Events are sparse (about 0.03 per fix).
/// - ``Layout/dense(webhooksPerFix:)``: zones generated on the devices' paths, as many as
///   it takes for the asked number of events per fix. Devices walk east in lanes 220 m
///   apart, 50 devices a lane, 9 m per fix; a 30 m circle every `spacing` fixes of a lane,
///   each entered and left (a check-in and a check-out) through its centre. Each device
///   starts at its own point of the lane, so devices cross their zones out of step with one
///   another and events arrive evenly rather than in waves.
///
/// Fixes of a device are in time order.
struct LoadTrip: Sendable {
    enum Layout: Sendable, Equatable {
        case exampleZones
        case dense(webhooksPerFix: Double)
    }

    static let secondsBetweenFixes = 5.0
    static let denseMetresBetweenFixes = 9.0
    static let denseZoneRadius = 30.0
    static let denseDevicesPerLane = 50
    static let denseLaneDegrees = 0.002
    static let denseOrigin = Position(lon: 144.90, lat: -37.80)

    let project: String
    let devices: Int
    let fixes: Int
    let layout: Layout
    /// The time of every device's first fix: far enough back that the last is not in the future.
    let origin: Date

    init(project: String, devices: Int, fixes: Int, layout: Layout = .exampleZones, now: Date = Date()) {
        self.project = project
        self.devices = devices
        self.fixes = fixes
        self.layout = layout
        // Whole seconds: a fix's time then reaches the pipeline exactly as the trip has it (the
        // wire writes milliseconds), and so the ids of the events the engine decides from it.
        let start = now.addingTimeInterval(-Double(fixes / devices + 1) * Self.secondsBetweenFixes)
        self.origin = Date(timeIntervalSince1970: start.timeIntervalSince1970.rounded(.down))
    }

    /// Steps of the longest device's walk.
    var steps: Int { (fixes + devices - 1) / devices }

    /// Fixes between two zones of a lane in the dense layout: each zone decides two events.
    var denseSpacing: Int {
        guard case .dense(let perFix) = layout, perFix > 0 else { return 0 }
        return max(Int((2 / perFix).rounded()), 10)
    }

    func batch(_ range: Range<Int>) throws -> [UInt8] {
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("fixes")
        writer.beginArray()
        for index in range {
            let fix = self.fix(index)
            writer.beginObject()
            writer.field("accuracy", 10)
            writer.field("deviceId", fix.deviceId)
            writer.field("fixId", fix.fixId ?? "")
            try writer.field("lat", fix.lat)
            try writer.field("lon", fix.lon)
            writer.field("projectId", project)
            writer.field("timestamp", fix.timestamp)
            writer.endObject()
        }
        writer.endArray()
        writer.endObject()
        return writer.bytes
    }

    /// Fix `index` of the trip.
    func fix(_ index: Int) -> Fix {
        let device = index % devices
        let step = index / devices
        let position: Position
        switch layout {
        case .exampleZones:
            let start = 144.9630 + Double(device % 120) * 0.0001
            position = Position(lon: start + Double(step) * 0.0001 - 0.006, lat: -37.8183 + Double(device % 9 - 4) * 0.0001)
        case .dense:
            position = densePosition(device: device, step: step)
        }
        return Fix(
            projectId: project, deviceId: "load-\(device)",
            timestamp: origin.addingTimeInterval(Double(step) * Self.secondsBetweenFixes), lat: position.lat,
            lon: position.lon, accuracy: 10, fixId: "load-\(device)-\(step)")
    }

    /// The index of the fix of `deviceId` taken at `time`, if it is one of this trip's.
    func fixIndex(deviceId: String, time: Date) -> Int? {
        guard deviceId.hasPrefix("load-"), let device = Int(deviceId.dropFirst(5)), device < devices else { return nil }
        let step = (time.timeIntervalSince(origin) / Self.secondsBetweenFixes).rounded()
        guard step >= 0 else { return nil }
        return Int(step) * devices + device
    }

    // MARK: The dense layout

    /// Where a device starts along its lane, in fixes: spread over one zone spacing by the
    /// golden ratio, so that neighbours are never in step.
    private func denseStartStep(device: Int) -> Double {
        let golden = 0.618_033_988_749_894_9
        return (Double(device) * golden).truncatingRemainder(dividingBy: 1) * Double(denseSpacing)
    }

    private func densePosition(device: Int, step: Int) -> Position {
        let lane = device / Self.denseDevicesPerLane
        let east = (denseStartStep(device: device) + Double(step)) * Self.denseMetresBetweenFixes
        return Self.offset(
            Position(lon: Self.denseOrigin.lon, lat: Self.denseOrigin.lat + Double(lane) * Self.denseLaneDegrees),
            east: east)
    }

    /// The zones the dense layout walks through: per lane, a 30 m circle every `denseSpacing`
    /// fixes from the lane's start to beyond its longest walk. Empty for the example layout,
    /// whose zones are `examples/zones.json`.
    var zones: ZonesDocument {
        guard denseSpacing > 0 else { return ZonesDocument(zones: []) }
        let lanes = (devices + Self.denseDevicesPerLane - 1) / Self.denseDevicesPerLane
        let zonesPerLane = (steps + 2 * denseSpacing) / denseSpacing + 1
        let spacingMetres = Double(denseSpacing) * Self.denseMetresBetweenFixes
        var zones: [ZoneDefinition] = []
        for lane in 0..<lanes {
            let laneStart = Position(
                lon: Self.denseOrigin.lon, lat: Self.denseOrigin.lat + Double(lane) * Self.denseLaneDegrees)
            for index in 0..<zonesPerLane {
                // Centres half a spacing in, so that no device starts inside one.
                let centre = Self.offset(laneStart, east: (Double(index) + 0.5) * spacingMetres + spacingMetres / 2)
                zones.append(
                    ZoneDefinition(
                        id: "lane-\(lane)-zone-\(index)", name: "Lane \(lane) zone \(index)", checkOutEnabled: true,
                        fences: [
                            FenceDefinition(id: "lane-\(lane)-fence-\(index)", geometry: .point(centre), radius: Self.denseZoneRadius)
                        ]))
            }
        }
        return ZonesDocument(zones: zones)
    }

    /// The events the trip decides, by the engine with its default settings (as the
    /// pipeline's), for the given zones: what a receiver must get, each exactly once. Each
    /// is keyed by its `eventId` (a webhook's `webhook-id`) to the fix that decided it: the
    /// engine's ids are deterministic, so the partner finds a webhook's fix without
    /// decoding its body.
    func decidingFixes(zones: ZonesDocument) throws -> [String: Int] {
        let engine = try GeofenceEngine(projects: [ProjectZones(projectId: project, zones: zones.zones)])
        var states = [DeviceState](repeating: DeviceState(), count: devices)
        var decidingFixes: [String: Int] = [:]
        for index in 0..<fixes {
            for event in engine.evaluate(fix(index), state: &states[index % devices]).events {
                decidingFixes[event.eventId] = index
            }
        }
        return decidingFixes
    }

    private static func offset(_ position: Position, east: Double) -> Position {
        let metresPerDegree = 111_320.0
        return Position(lon: position.lon + east / (metresPerDegree * cos(position.lat * .pi / 180)), lat: position.lat)
    }
}
