import Foundation

/// What a fix did to the device's relation with one zone, or, for the fix-level `late` and
/// `duplicate`, why the fix was not evaluated at all (docs/evaluation-rules.md#outcomes).
public enum DecisionOutcome: String, Sendable, Codable, CaseIterable {
    case checkedIn = "checked-in"
    case checkedOut = "checked-out"
    /// Presence began without a check-in (`reason` says why).
    case entered
    /// Presence ended with no check-in open.
    case left
    /// The fix would have changed presence, or crossed a geoline, but did not count.
    case ignored
    case late
    case duplicate
}

/// Why an entry or a crossing was not a check-in, or why a fix was ignored: one code per
/// rule, each listed in docs/evaluation-rules.md#reason-codes. The strings are stable;
/// clients may match on them.
public enum DecisionReason: String, Sendable, Codable, CaseIterable {
    case zoneDisabled = "zone-disabled"
    case zoneInactive = "zone-inactive"
    case minimumRetriggerTime = "minimum-retrigger-time"
    case speedMissing = "speed-missing"
    case speedOutOfRange = "speed-out-of-range"
    case bearingMissing = "bearing-missing"
    case bearingOutOfRange = "bearing-out-of-range"
    case percentageCrossedNotReached = "percentage-crossed-not-reached"
    case sequentialNoPriorCheckIn = "sequential-no-prior-check-in"
    case sequentialTooLongAgo = "sequential-too-long-ago"
    case restartModeConditions = "restart-mode-conditions"
    case accuracyTooLow = "accuracy-too-low"
    case crossingGapTooLong = "crossing-gap-too-long"
    case crossingRestartMode = "crossing-restart-mode"
    case beaconRSSIBelowThreshold = "beacon-rssi-below-threshold"
}

/// The numbers behind an entry: only what its rule looked at is set.
public struct DecisionDetail: Sendable, Equatable, Codable {
    /// A check-out's reason (`exit`, `beacon-lost`, `timeout`).
    public var reason: String?
    public var checkInId: String?
    public var beaconId: String?
    public var accuracy: Double?
    public var maxAccuracy: Double?
    public var speed: Double?
    public var minSpeed: Double?
    public var maxSpeed: Double?
    public var bearing: Double?
    public var bearingFrom: Double?
    public var bearingTo: Double?
    /// When the zone's minimum retrigger time ends.
    public var retriggerUntil: Date?
    public var minimumRetriggerTime: Double?
    public var percentageReached: Double?
    public var percentageRequired: Double?
    public var afterZoneId: String?
    public var earlierCheckInAt: Date?
    public var withinSeconds: Double?
    /// Seconds since the previous fix accurate enough to count (a geoline crossing).
    public var gapSeconds: Double?
    public var maxCrossingGap: Double?
    public var rssi: Int?
    public var rssiThreshold: Int?
    /// The device's last evaluated fix, which a `late` fix is older than.
    public var lastFixAt: Date?
    /// The conditions a restart-mode fix cannot satisfy.
    public var conditions: [String]?

    public init() {}

    public var isEmpty: Bool { self == DecisionDetail() }
}

/// One zone's part in a fix's decision, or the fix-level `late` / `duplicate`.
public struct DecisionEntry: Sendable, Equatable, Codable {
    public var zoneId: String?
    public var fenceId: String?
    public var outcome: DecisionOutcome
    public var reason: DecisionReason?
    public var detail: DecisionDetail

    public init(
        zoneId: String? = nil, fenceId: String? = nil, outcome: DecisionOutcome, reason: DecisionReason? = nil,
        detail: DecisionDetail = DecisionDetail()
    ) {
        self.zoneId = zoneId
        self.fenceId = fenceId
        self.outcome = outcome
        self.reason = reason
        self.detail = detail
    }
}

/// Where the device said it was, as a decision record keeps it.
public struct DecisionLocation: Sendable, Equatable, Codable {
    public var lat: Double
    public var lon: Double
    public var accuracy: Double?
    public var speed: Double?
    public var bearing: Double?

    public init(lat: Double, lon: Double, accuracy: Double? = nil, speed: Double? = nil, bearing: Double? = nil) {
        self.lat = lat
        self.lon = lon
        self.accuracy = accuracy
        self.speed = speed
        self.bearing = bearing
    }

    public init(_ fix: Fix) {
        self.init(lat: fix.lat, lon: fix.lon, accuracy: fix.accuracy, speed: fix.speed, bearing: fix.bearing)
    }
}

/// Everything the evaluator decided about one fix of one device (docs/evaluation-rules.md#decision-records).
public struct DecisionRecord: Sendable, Equatable, Codable {
    public var fixId: String?
    /// The fix's own time.
    public var timestamp: Date
    /// When the evaluator decided it (absent from offline replays, which have no such time).
    public var evaluatedAt: Date?
    public var mode: FixMode
    public var location: DecisionLocation
    public var entries: [DecisionEntry]
    public var eventIds: [String]

    public init(
        fixId: String?, timestamp: Date, evaluatedAt: Date? = nil, mode: FixMode, location: DecisionLocation,
        entries: [DecisionEntry], eventIds: [String]
    ) {
        self.fixId = fixId
        self.timestamp = timestamp
        self.evaluatedAt = evaluatedAt
        self.mode = mode
        self.location = location
        self.entries = entries
        self.eventIds = eventIds
    }

    /// The one word a trail marks the fix with: what mattered most among its entries.
    public var summary: String {
        let ranked: [DecisionOutcome] = [.checkedIn, .checkedOut, .late, .duplicate, .ignored, .entered, .left]
        for outcome in ranked where entries.contains(where: { $0.outcome == outcome }) { return outcome.rawValue }
        return "evaluated"
    }
}
