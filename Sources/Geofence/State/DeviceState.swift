import Foundation
import Shared

/// Everything the engine remembers about one device of one project.
///
/// Stored by the Evaluator as JSON next to the consumer offsets, so it is small and
/// bounded: short keys, times as plain seconds (independent of any date coding
/// strategy), only the last `rememberedFixIds` fix ids, and only the zones where
/// something is still going on (presence, an open check-in, a running MRT or a
/// sequential window). Zones that no longer exist are dropped when next seen.
public struct DeviceState: Codable, Sendable, Equatable {
    /// How many recent fix ids are kept to recognise resent fixes.
    public static let rememberedFixIds = 32
    /// At most this many zone memories; the oldest idle ones go first.
    public static let rememberedZones = 256

    /// Timestamp (seconds since 1970) of the last evaluated fix.
    var lastTime: Double?
    /// The last evaluated fix, the location of a timeout check-out.
    var lastFix: FixMemory?
    /// The last fix accurate enough to count, the start of the next geoline test.
    var track: TrackPoint?
    /// Digests of the last fix ids (53 bits, exact as JSON numbers anywhere).
    var recentFixIds: [UInt64]
    /// Where the next digest goes once `recentFixIds` is full (a ring, so nothing moves).
    var recentCursor: Int = 0
    var zones: [ZoneMemory]
    /// The `sequence` of the device's last event (0: none yet). States stored before
    /// events carried a sequence decode with 0 and count on from there.
    public internal(set) var lastSequence: Int = 0

    /// A device never seen.
    public init() {
        recentFixIds = []
        zones = []
    }

    enum CodingKeys: String, CodingKey {
        case lastTime = "t", lastFix = "f", track = "p", recentFixIds = "ids", recentCursor = "ic", zones = "z"
        case lastSequence = "n"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        lastTime = try container.decodeIfPresent(Double.self, forKey: .lastTime)
        lastFix = try container.decodeIfPresent(FixMemory.self, forKey: .lastFix)
        track = try container.decodeIfPresent(TrackPoint.self, forKey: .track)
        recentFixIds = try container.decodeIfPresent([UInt64].self, forKey: .recentFixIds) ?? []
        recentCursor = try container.decodeIfPresent(Int.self, forKey: .recentCursor) ?? 0
        if !(0..<Self.rememberedFixIds).contains(recentCursor) { recentCursor = 0 }
        zones = try container.decodeIfPresent([ZoneMemory].self, forKey: .zones) ?? []
        lastSequence = try container.decodeIfPresent(Int.self, forKey: .lastSequence) ?? 0
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(lastTime, forKey: .lastTime)
        try container.encodeIfPresent(lastFix, forKey: .lastFix)
        try container.encodeIfPresent(track, forKey: .track)
        if !recentFixIds.isEmpty { try container.encode(recentFixIds, forKey: .recentFixIds) }
        if recentCursor != 0 { try container.encode(recentCursor, forKey: .recentCursor) }
        if !zones.isEmpty { try container.encode(zones, forKey: .zones) }
        if lastSequence != 0 { try container.encode(lastSequence, forKey: .lastSequence) }
    }

    /// Numbers the events of one decision in the order they were decided, after the device's earlier ones.
    mutating func number(_ events: inout [CheckEvent]) {
        for index in events.indices {
            lastSequence += 1
            events[index].sequence = lastSequence
        }
    }

    /// When the last evaluated fix was taken.
    public var lastFixTime: Date? { lastTime.map { Date(timeIntervalSince1970: $0) } }

    /// Zones the device is checked into with a check-out still to come.
    public var openCheckInZoneIds: [String] { zones.filter { $0.open != nil }.map(\.zoneId) }

    /// Zones the device is currently inside (by a fence or a beacon).
    public var presentZoneIds: [String] { zones.filter(\.isPresent).map(\.zoneId) }

    mutating func remember(fixId digest: UInt64) {
        if recentFixIds.count < Self.rememberedFixIds {
            recentFixIds.append(digest)
        } else {
            if recentCursor >= recentFixIds.count { recentCursor = 0 }
            recentFixIds[recentCursor] = digest
            recentCursor = (recentCursor + 1) % Self.rememberedFixIds
        }
    }

    /// A 53-bit FNV-1a digest of a fix id: a resent fix is recognised by comparing
    /// numbers, and a collision among the last few dozen ids (about 1 in 10^14) is
    /// the only way a distinct fix could be mistaken for a resent one.
    static func digest(of fixId: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        var text = fixId
        text.withUTF8 { bytes in
            for byte in bytes {
                hash ^= UInt64(byte)
                hash = hash &* 0x0000_0100_0000_01B3
            }
        }
        return hash & ((1 << 53) - 1)
    }

    func memoryIndex(of zoneId: String) -> Int? {
        zones.firstIndex { $0.zoneId == zoneId }
    }
}

/// What the engine remembers about one device in one zone.
struct ZoneMemory: Codable, Sendable, Equatable {
    var zoneId: String
    /// Inside one of the zone's fences (with the exit buffer's hysteresis).
    var fenceInside: Bool = false
    /// Fix time of the last qualifying beacon sighting, while the beacon counts as present.
    var beaconSeen: Double?
    /// The check-in that a check-out will close.
    var open: OpenCheckIn?
    /// Time of the last check-in, for sequential conditions.
    var lastCheckIn: Double?
    /// The MRT runs from here (check-in time, or check-out time when check-out is enabled).
    var retriggerFrom: Double?

    var isPresent: Bool { fenceInside || beaconSeen != nil }

    enum CodingKeys: String, CodingKey {
        case zoneId = "id", fenceInside = "in", beaconSeen = "b", open = "o", lastCheckIn = "c", retriggerFrom = "r"
    }

    init(zoneId: String) { self.zoneId = zoneId }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        zoneId = try container.decode(String.self, forKey: .zoneId)
        fenceInside = try container.decodeIfPresent(Bool.self, forKey: .fenceInside) ?? false
        beaconSeen = try container.decodeIfPresent(Double.self, forKey: .beaconSeen)
        open = try container.decodeIfPresent(OpenCheckIn.self, forKey: .open)
        lastCheckIn = try container.decodeIfPresent(Double.self, forKey: .lastCheckIn)
        retriggerFrom = try container.decodeIfPresent(Double.self, forKey: .retriggerFrom)
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(zoneId, forKey: .zoneId)
        if fenceInside { try container.encode(true, forKey: .fenceInside) }
        try container.encodeIfPresent(beaconSeen, forKey: .beaconSeen)
        try container.encodeIfPresent(open, forKey: .open)
        try container.encodeIfPresent(lastCheckIn, forKey: .lastCheckIn)
        try container.encodeIfPresent(retriggerFrom, forKey: .retriggerFrom)
    }
}

/// A check-in that will be closed by a check-out.
struct OpenCheckIn: Codable, Sendable, Equatable {
    var checkInId: String
    var time: Double
    var fenceId: String?
    var beaconId: String?

    enum CodingKeys: String, CodingKey { case checkInId = "id", time = "t", fenceId = "f", beaconId = "b" }
}

/// The last evaluated fix, enough to describe where a timeout check-out happened.
struct FixMemory: Codable, Sendable, Equatable {
    var time: Double
    var lat: Double
    var lon: Double
    var accuracy: Double?
    var speed: Double?
    var bearing: Double?

    enum CodingKeys: String, CodingKey {
        case time = "t", lat = "la", lon = "lo", accuracy = "a", speed = "s", bearing = "b"
    }

    init(_ fix: Fix) {
        time = fix.timestamp.timeIntervalSince1970
        lat = fix.lat
        lon = fix.lon
        accuracy = fix.accuracy
        speed = fix.speed
        bearing = fix.bearing
    }

    var location: EventLocation {
        EventLocation(
            timestamp: Date(timeIntervalSince1970: time), lat: lat, lon: lon, accuracy: accuracy, speed: speed,
            bearing: bearing)
    }
}

/// A position and time on the device's path.
struct TrackPoint: Codable, Sendable, Equatable {
    var time: Double
    var lat: Double
    var lon: Double

    enum CodingKeys: String, CodingKey { case time = "t", lat = "la", lon = "lo" }
}
