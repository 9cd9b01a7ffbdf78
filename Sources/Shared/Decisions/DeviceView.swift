import Foundation

/// What a device is now, as its stored state has it (`GET /v1/devices/{deviceId}`,
/// docs/evaluation-rules.md#reading-decision-records).
public struct DeviceView: Sendable, Equatable, Codable {
    public var projectId: String
    public var deviceId: String
    /// The last evaluated fix (nil: the state holds none).
    public var lastFix: DecisionLocationAt?
    /// The `sequence` of the device's last event (0: none yet).
    public var sequence: Int
    public var openCheckIns: [OpenCheckInView]
    /// Zones the device is inside without a check-in, with the reason its entry gave.
    public var insideWithoutCheckIn: [InsideWithoutCheckIn]
    /// Zones whose minimum retrigger time still holds back a check-in, and until when.
    public var minimumRetriggerTimes: [RetriggerView]
    /// When the open check-ins time out if the device stays silent (nil: nothing open).
    public var staleCheckOutAt: Date?

    public init(
        projectId: String, deviceId: String, lastFix: DecisionLocationAt?, sequence: Int, openCheckIns: [OpenCheckInView],
        insideWithoutCheckIn: [InsideWithoutCheckIn], minimumRetriggerTimes: [RetriggerView], staleCheckOutAt: Date?
    ) {
        self.projectId = projectId
        self.deviceId = deviceId
        self.lastFix = lastFix
        self.sequence = sequence
        self.openCheckIns = openCheckIns
        self.insideWithoutCheckIn = insideWithoutCheckIn
        self.minimumRetriggerTimes = minimumRetriggerTimes
        self.staleCheckOutAt = staleCheckOutAt
    }
}

/// A position with its time.
public struct DecisionLocationAt: Sendable, Equatable, Codable {
    public var timestamp: Date
    public var lat: Double
    public var lon: Double
    public var accuracy: Double?

    public init(timestamp: Date, lat: Double, lon: Double, accuracy: Double?) {
        self.timestamp = timestamp
        self.lat = lat
        self.lon = lon
        self.accuracy = accuracy
    }
}

public struct OpenCheckInView: Sendable, Equatable, Codable {
    public var zoneId: String
    public var fenceId: String?
    public var beaconId: String?
    public var checkInId: String
    public var since: Date

    public init(zoneId: String, fenceId: String?, beaconId: String?, checkInId: String, since: Date) {
        self.zoneId = zoneId
        self.fenceId = fenceId
        self.beaconId = beaconId
        self.checkInId = checkInId
        self.since = since
    }
}

public struct InsideWithoutCheckIn: Sendable, Equatable, Codable {
    public var zoneId: String
    /// Why the entry was not a check-in, from the device's newest decision about the zone
    /// (nil when that record is gone, or the check-in had no check-out to wait for).
    public var reason: DecisionReason?
    public var detail: DecisionDetail?

    public init(zoneId: String, reason: DecisionReason? = nil, detail: DecisionDetail? = nil) {
        self.zoneId = zoneId
        self.reason = reason
        self.detail = detail
    }
}

public struct RetriggerView: Sendable, Equatable, Codable {
    public var zoneId: String
    public var until: Date

    public init(zoneId: String, until: Date) {
        self.zoneId = zoneId
        self.until = until
    }
}
