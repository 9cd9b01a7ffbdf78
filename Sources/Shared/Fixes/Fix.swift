import Foundation

/// One location report of one device: the unit that flows through `checkin.fixes`.
public struct Fix: Sendable, Equatable, Hashable {
    public var projectId: String
    public var deviceId: String
    public var timestamp: Date
    public var lat: Double
    public var lon: Double
    /// Horizontal accuracy radius in metres; a fix without one is taken as exact.
    public var accuracy: Double?
    /// Metres per second.
    public var speed: Double?
    /// Degrees clockwise from true north, 0..<360.
    public var bearing: Double?
    public var altitude: Double?
    public var source: FixSource?
    public var mode: FixMode
    public var beacons: [BeaconSighting]
    /// The client's id for this fix, used to evaluate a resent fix only once.
    public var fixId: String?

    public init(
        projectId: String, deviceId: String, timestamp: Date, lat: Double, lon: Double,
        accuracy: Double? = nil, speed: Double? = nil, bearing: Double? = nil, altitude: Double? = nil,
        source: FixSource? = nil, mode: FixMode = .normal, beacons: [BeaconSighting] = [], fixId: String? = nil
    ) {
        self.projectId = projectId
        self.deviceId = deviceId
        self.timestamp = timestamp
        self.lat = lat
        self.lon = lon
        self.accuracy = accuracy
        self.speed = speed
        self.bearing = bearing
        self.altitude = altitude
        self.source = source
        self.mode = mode
        self.beacons = beacons
        self.fixId = fixId
    }
}

public enum FixSource: String, Sendable, Codable, CaseIterable {
    case gps, wifi, cell, slc, beacon
}

/// `restart` marks fixes sent after iOS relaunched a terminated app in the
/// background (significant-location change or Bluetooth state restoration):
/// they are coarse, so the engine widens fences and suppresses precise triggers.
public enum FixMode: String, Sendable, Codable, CaseIterable {
    case normal, restart
}

/// One beacon heard by the device with this fix. iBeacons carry uuid/major/minor,
/// Eddystone beacons carry `eddystoneId`.
public struct BeaconSighting: Sendable, Equatable, Hashable, Codable {
    public var uuid: String?
    public var major: Int?
    public var minor: Int?
    public var eddystoneId: String?
    /// Received signal strength in dBm (negative; closer to 0 is nearer).
    public var rssi: Int

    public init(uuid: String? = nil, major: Int? = nil, minor: Int? = nil, eddystoneId: String? = nil, rssi: Int) {
        self.uuid = uuid
        self.major = major
        self.minor = minor
        self.eddystoneId = eddystoneId
        self.rssi = rssi
    }
}

extension Fix: Codable {
    enum CodingKeys: String, CodingKey {
        case projectId, deviceId, timestamp, lat, lon, accuracy, speed, bearing, altitude, source, mode, beacons, fixId
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        projectId = try container.decode(String.self, forKey: .projectId)
        deviceId = try container.decode(String.self, forKey: .deviceId)
        timestamp = try container.decode(Date.self, forKey: .timestamp)
        lat = try container.decode(Double.self, forKey: .lat)
        lon = try container.decode(Double.self, forKey: .lon)
        accuracy = try container.decodeIfPresent(Double.self, forKey: .accuracy)
        speed = try container.decodeIfPresent(Double.self, forKey: .speed)
        bearing = try container.decodeIfPresent(Double.self, forKey: .bearing)
        altitude = try container.decodeIfPresent(Double.self, forKey: .altitude)
        source = try container.decodeIfPresent(FixSource.self, forKey: .source)
        mode = try container.decodeIfPresent(FixMode.self, forKey: .mode) ?? .normal
        beacons = try container.decodeIfPresent([BeaconSighting].self, forKey: .beacons) ?? []
        fixId = try container.decodeIfPresent(String.self, forKey: .fixId)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(projectId, forKey: .projectId)
        try container.encode(deviceId, forKey: .deviceId)
        try container.encode(timestamp, forKey: .timestamp)
        try container.encode(lat, forKey: .lat)
        try container.encode(lon, forKey: .lon)
        try container.encodeIfPresent(accuracy, forKey: .accuracy)
        try container.encodeIfPresent(speed, forKey: .speed)
        try container.encodeIfPresent(bearing, forKey: .bearing)
        try container.encodeIfPresent(altitude, forKey: .altitude)
        try container.encodeIfPresent(source, forKey: .source)
        try container.encode(mode, forKey: .mode)
        if !beacons.isEmpty { try container.encode(beacons, forKey: .beacons) }
        try container.encodeIfPresent(fixId, forKey: .fixId)
    }
}
