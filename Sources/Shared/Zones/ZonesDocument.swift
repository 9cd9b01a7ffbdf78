/// The zones of one project as users write them: the body of the management API
/// and the input of `checkin replay`.
public struct ZonesDocument: Sendable, Equatable, Codable {
    public var zones: [ZoneDefinition]

    public init(zones: [ZoneDefinition]) {
        self.zones = zones
    }

    enum CodingKeys: String, CodingKey { case zones }

    /// Every zone (and each of its fences and beacons) that cannot be read is named, each
    /// with its first problem (`DecodingFailures` when there are several), not the first of
    /// the document alone: a document of many zones is mended in one pass.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        var list = try container.nestedUnkeyedContainer(forKey: .zones)
        var failures: [DecodingError] = []
        zones = try list.decodeEach(ZoneDefinition.self, failures: &failures)
        try DecodingFailures.throwIfAny(failures)
    }
}

/// A zone: what a partner is told about (name, custom data) and where it is (fences, beacons).
public struct ZoneDefinition: Sendable, Equatable, Codable {
    public var id: String
    public var name: String
    public var description: String
    /// Handed unchanged to partners with every event; at most 50 keys.
    public var customData: [String: String]
    /// Seconds during which the zone cannot check the same device in again.
    public var minimumRetriggerTime: Double
    public var checkOutEnabled: Bool
    public var enabled: Bool
    public var conditions: ZoneConditions?
    public var activeSchedule: ActiveSchedule?
    public var fences: [FenceDefinition]
    public var beacons: [BeaconDefinition]

    public init(
        id: String, name: String, description: String = "", customData: [String: String] = [:],
        minimumRetriggerTime: Double = 0, checkOutEnabled: Bool = false, enabled: Bool = true,
        conditions: ZoneConditions? = nil, activeSchedule: ActiveSchedule? = nil,
        fences: [FenceDefinition] = [], beacons: [BeaconDefinition] = []
    ) {
        self.id = id
        self.name = name
        self.description = description
        self.customData = customData
        self.minimumRetriggerTime = minimumRetriggerTime
        self.checkOutEnabled = checkOutEnabled
        self.enabled = enabled
        self.conditions = conditions
        self.activeSchedule = activeSchedule
        self.fences = fences
        self.beacons = beacons
    }

    enum CodingKeys: String, CodingKey {
        case id, name, description, customData, minimumRetriggerTime, checkOutEnabled, enabled, conditions
        case activeSchedule, fences, beacons
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        name = try container.decodeIfPresent(String.self, forKey: .name) ?? id
        description = try container.decodeIfPresent(String.self, forKey: .description) ?? ""
        customData = try container.decodeIfPresent([String: String].self, forKey: .customData) ?? [:]
        minimumRetriggerTime = try container.decodeIfPresent(Double.self, forKey: .minimumRetriggerTime) ?? 0
        checkOutEnabled = try container.decodeIfPresent(Bool.self, forKey: .checkOutEnabled) ?? false
        enabled = try container.decodeIfPresent(Bool.self, forKey: .enabled) ?? true
        conditions = try container.decodeIfPresent(ZoneConditions.self, forKey: .conditions)
        activeSchedule = try container.decodeIfPresent(ActiveSchedule.self, forKey: .activeSchedule)
        var failures: [DecodingError] = []
        fences = try Self.decodeEach(FenceDefinition.self, forKey: .fences, of: container, failures: &failures)
        beacons = try Self.decodeEach(BeaconDefinition.self, forKey: .beacons, of: container, failures: &failures)
        try DecodingFailures.throwIfAny(failures)
    }

    /// The list at `key` (none when absent or null), each element that cannot be read added
    /// to `failures`.
    private static func decodeEach<Element: Decodable>(
        _ type: Element.Type, forKey key: CodingKeys, of container: KeyedDecodingContainer<CodingKeys>,
        failures: inout [DecodingError]
    ) throws -> [Element] {
        guard container.contains(key), try !container.decodeNil(forKey: key) else { return [] }
        var list = try container.nestedUnkeyedContainer(forKey: key)
        return try list.decodeEach(type, failures: &failures)
    }
}

/// One area of a zone. A `Point` geometry is a circle of `radius` metres.
public struct FenceDefinition: Sendable, Equatable, Codable {
    public var id: String
    public var name: String
    public var description: String
    public var geometry: GeoJSONGeometry
    public var radius: Double?

    public init(id: String, name: String = "", description: String = "", geometry: GeoJSONGeometry, radius: Double? = nil) {
        self.id = id
        self.name = name
        self.description = description
        self.geometry = geometry
        self.radius = radius
    }

    enum CodingKeys: String, CodingKey { case id, name, description, geometry, radius }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        name = try container.decodeIfPresent(String.self, forKey: .name) ?? ""
        description = try container.decodeIfPresent(String.self, forKey: .description) ?? ""
        geometry = try container.decode(GeoJSONGeometry.self, forKey: .geometry)
        radius = try container.decodeIfPresent(Double.self, forKey: .radius)
    }
}

/// A beacon of a zone: an iBeacon (`uuid`, optional `major`/`minor` narrowing it)
/// or an Eddystone beacon (`eddystoneId`).
public struct BeaconDefinition: Sendable, Equatable, Codable {
    public var id: String
    public var name: String
    public var uuid: String?
    public var major: Int?
    public var minor: Int?
    public var eddystoneId: String?
    /// Weakest signal (dBm) that still counts as a sighting.
    public var rssiThreshold: Int

    public init(
        id: String, name: String = "", uuid: String? = nil, major: Int? = nil, minor: Int? = nil,
        eddystoneId: String? = nil, rssiThreshold: Int = -80
    ) {
        self.id = id
        self.name = name
        self.uuid = uuid
        self.major = major
        self.minor = minor
        self.eddystoneId = eddystoneId
        self.rssiThreshold = rssiThreshold
    }

    enum CodingKeys: String, CodingKey { case id, name, uuid, major, minor, eddystoneId, rssiThreshold }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        name = try container.decodeIfPresent(String.self, forKey: .name) ?? ""
        uuid = try container.decodeIfPresent(String.self, forKey: .uuid)?.uppercased()
        major = try container.decodeIfPresent(Int.self, forKey: .major)
        minor = try container.decodeIfPresent(Int.self, forKey: .minor)
        eddystoneId = try container.decodeIfPresent(String.self, forKey: .eddystoneId)?.lowercased()
        rssiThreshold = try container.decodeIfPresent(Int.self, forKey: .rssiThreshold) ?? -80
    }
}

/// Extra requirements on the fix that triggers a check-in; all that are set must hold.
public struct ZoneConditions: Sendable, Equatable, Codable {
    /// Metres per second; the fix must carry a speed when either bound is set.
    public var minSpeed: Double?
    public var maxSpeed: Double?
    public var bearing: BearingRange?
    /// 0...100: how deep into the fence the fix must be, from the boundary (0)
    /// to the fence's deepest interior point (100).
    public var percentageCrossed: Double?
    public var sequential: SequentialCondition?

    public init(
        minSpeed: Double? = nil, maxSpeed: Double? = nil, bearing: BearingRange? = nil,
        percentageCrossed: Double? = nil, sequential: SequentialCondition? = nil
    ) {
        self.minSpeed = minSpeed
        self.maxSpeed = maxSpeed
        self.bearing = bearing
        self.percentageCrossed = percentageCrossed
        self.sequential = sequential
    }

    /// Conditions that need a precise, live fix; restart-mode fixes never satisfy them.
    public var needsPreciseFix: Bool {
        minSpeed != nil || maxSpeed != nil || bearing != nil || percentageCrossed != nil || sequential != nil
    }
}

/// Degrees true north, clockwise from `from` to `to`; `from: 350, to: 10` wraps through north.
public struct BearingRange: Sendable, Equatable, Codable {
    public var from: Double
    public var to: Double

    public init(from: Double, to: Double) {
        self.from = from
        self.to = to
    }
}

/// The device must have checked into `afterZoneId` at most `withinSeconds` before.
public struct SequentialCondition: Sendable, Equatable, Codable {
    public var afterZoneId: String
    public var withinSeconds: Double

    public init(afterZoneId: String, withinSeconds: Double) {
        self.afterZoneId = afterZoneId
        self.withinSeconds = withinSeconds
    }
}

/// Weekly windows, in the zone's IANA time zone, during which it can check devices in.
public struct ActiveSchedule: Sendable, Equatable, Codable {
    /// An IANA name such as `Europe/Paris`.
    public var timeZone: String
    public var windows: [ScheduleWindow]

    public init(timeZone: String, windows: [ScheduleWindow]) {
        self.timeZone = timeZone
        self.windows = windows
    }
}

/// From `start` to `end` (`HH:MM`, local time) on each of `days`; an `end` before
/// `start` runs past midnight into the next day.
public struct ScheduleWindow: Sendable, Equatable, Codable {
    public var days: [Weekday]
    public var start: String
    public var end: String

    public init(days: [Weekday], start: String, end: String) {
        self.days = days
        self.start = start
        self.end = end
    }
}

public enum Weekday: String, Sendable, Codable, CaseIterable {
    case monday, tuesday, wednesday, thursday, friday, saturday, sunday
}
