import Foundation

/// A check-in or check-out decided by the engine: the record of
/// `checkin.checkins` / `checkin.checkouts` and the `data` of a webhook.
public struct CheckEvent: Sendable, Equatable, Codable {
    /// Deterministic: the same input always yields the same id, so every
    /// redelivery downstream can be recognised and dropped.
    public var eventId: String
    /// The device's decision counter: 1, 2, 3 … per project and device across both
    /// event topics, so that consumers and partners can put a device's events in order.
    public var sequence: Int
    public var type: EventType
    public var projectId: String
    public var deviceId: String
    /// The id of the check-in; a check-out carries the id of the check-in it closes.
    public var checkInId: String
    public var zone: ZoneSummary
    public var fence: FenceSummary?
    public var beacon: BeaconSummary?
    public var location: EventLocation
    public var willCheckOut: Bool
    public var mode: FixMode
    /// Set on check-ins triggered by crossing a geoline.
    public var crossing: GeolineCrossing?
    public var checkInTime: Date?
    public var checkOutTime: Date?
    public var dwellSeconds: Double?
    public var reason: CheckOutReason?

    public init(
        eventId: String, type: EventType, projectId: String, deviceId: String, checkInId: String,
        zone: ZoneSummary, fence: FenceSummary? = nil, beacon: BeaconSummary? = nil, location: EventLocation,
        willCheckOut: Bool, mode: FixMode, crossing: GeolineCrossing? = nil, checkInTime: Date? = nil,
        checkOutTime: Date? = nil, dwellSeconds: Double? = nil, reason: CheckOutReason? = nil, sequence: Int = 0
    ) {
        self.eventId = eventId
        self.sequence = sequence
        self.type = type
        self.projectId = projectId
        self.deviceId = deviceId
        self.checkInId = checkInId
        self.zone = zone
        self.fence = fence
        self.beacon = beacon
        self.location = location
        self.willCheckOut = willCheckOut
        self.mode = mode
        self.crossing = crossing
        self.checkInTime = checkInTime
        self.checkOutTime = checkOutTime
        self.dwellSeconds = dwellSeconds
        self.reason = reason
    }
}

public enum EventType: String, Sendable, Codable {
    case checkin, checkout
}

public enum CheckOutReason: String, Sendable, Codable {
    case exit
    /// No fix for `staleAfter`: the app was probably force-quit and will not report an exit.
    case timeout
    case beaconLost = "beacon-lost"
}

public struct ZoneSummary: Sendable, Equatable, Codable {
    public var id: String
    public var name: String
    public var description: String
    public var customData: [String: String]

    public init(id: String, name: String, description: String, customData: [String: String]) {
        self.id = id
        self.name = name
        self.description = description
        self.customData = customData
    }

    public init(_ zone: ZoneDefinition) {
        self.init(id: zone.id, name: zone.name, description: zone.description, customData: zone.customData)
    }
}

public struct FenceSummary: Sendable, Equatable, Codable {
    public var id: String
    public var name: String
    public var description: String
    /// Nil when `geometryOmitted`: a geometry of more than
    /// `InputLimits.maximumEventGeometryPositions` positions is left out so that every
    /// event fits in a Kafka message; the zones API has it.
    public var geometry: GeoJSONGeometry?
    /// True when the geometry was left out for its size (absent otherwise).
    public var geometryOmitted: Bool?
    public var radius: Double?

    public init(
        id: String, name: String, description: String, geometry: GeoJSONGeometry?, geometryOmitted: Bool? = nil,
        radius: Double? = nil
    ) {
        self.id = id
        self.name = name
        self.description = description
        self.geometry = geometry
        self.geometryOmitted = geometryOmitted
        self.radius = radius
    }

    public init(_ fence: FenceDefinition) {
        self.init(id: fence.id, name: fence.name, description: fence.description, geometry: fence.geometry, radius: fence.radius)
    }
}

public struct BeaconSummary: Sendable, Equatable, Codable {
    public var id: String
    public var name: String
    public var uuid: String?
    public var major: Int?
    public var minor: Int?
    public var eddystoneId: String?

    public init(id: String, name: String, uuid: String? = nil, major: Int? = nil, minor: Int? = nil, eddystoneId: String? = nil) {
        self.id = id
        self.name = name
        self.uuid = uuid
        self.major = major
        self.minor = minor
        self.eddystoneId = eddystoneId
    }

    public init(_ beacon: BeaconDefinition) {
        self.init(
            id: beacon.id, name: beacon.name, uuid: beacon.uuid, major: beacon.major, minor: beacon.minor,
            eddystoneId: beacon.eddystoneId)
    }
}

/// Where and when the triggering fix was.
public struct EventLocation: Sendable, Equatable, Codable {
    public var timestamp: Date
    public var lat: Double
    public var lon: Double
    public var accuracy: Double?
    public var speed: Double?
    public var bearing: Double?

    public init(timestamp: Date, lat: Double, lon: Double, accuracy: Double? = nil, speed: Double? = nil, bearing: Double? = nil) {
        self.timestamp = timestamp
        self.lat = lat
        self.lon = lon
        self.accuracy = accuracy
        self.speed = speed
        self.bearing = bearing
    }

    public init(_ fix: Fix) {
        self.init(
            timestamp: fix.timestamp, lat: fix.lat, lon: fix.lon, accuracy: fix.accuracy, speed: fix.speed,
            bearing: fix.bearing)
    }
}

/// Where a device's path crossed a geoline, and which way relative to the line's
/// digitised direction (walking along the line, what is on the left or the right).
public struct GeolineCrossing: Sendable, Equatable, Codable {
    public var lat: Double
    public var lon: Double
    public var direction: CrossingDirection

    public init(lat: Double, lon: Double, direction: CrossingDirection) {
        self.lat = lat
        self.lon = lon
        self.direction = direction
    }
}

public enum CrossingDirection: String, Sendable, Codable {
    case leftToRight = "left-to-right"
    case rightToLeft = "right-to-left"
}
