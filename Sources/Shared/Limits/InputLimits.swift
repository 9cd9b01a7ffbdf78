import Foundation

/// The limits (docs/http-api.md#limits) on everything that comes in: fixes, zones documents,
/// webhook endpoints and request bodies. Kept in one place so that the HTTP API,
/// `checkin replay`, zones import and the evaluator refuse the same input with the
/// same words, and so that every event built from accepted input provably fits in
/// a Kafka message (`maximumEventBytes`).
///
/// Lengths are counted in Unicode scalars ("characters"): a scalar takes at most
/// 4 bytes of UTF-8, which is what bounds the encoded size of an event.
public struct InputLimits: Sendable, Equatable {
    /// Ids (`projectId`, `deviceId`, zone, fence and beacon ids, `fixId`): 1 to this many characters.
    public static let maximumIdentifierLength = 128
    /// Zone, fence and beacon names.
    public static let maximumNameLength = 256
    /// Zone and fence descriptions.
    public static let maximumDescriptionLength = 4_096
    public static let maximumCustomDataKeys = 50
    public static let maximumCustomDataKeyLength = 64
    public static let maximumCustomDataValueLength = 1_024
    /// Positions of one fence: a polygon's rings together, a multi-polygon's parts together, or a geoline.
    public static let maximumPositions = 10_000
    /// Fence geometries with more positions than this are left out of events
    /// (`geometryOmitted: true`) and are read from the zones API instead.
    public static let maximumEventGeometryPositions = 1_000
    /// Webhook endpoint URLs.
    public static let maximumURLLength = 2_048
    /// 5 MiB: larger request bodies are answered 413.
    public static let maximumRequestBodyBytes = 5 * 1024 * 1024
    /// An encoded event is at most this many bytes: under Kafka's default `message.max.bytes` (1 MiB).
    public static let maximumEventBytes = 1_000_000
    /// No fix is older than this: 2000-01-01T00:00:00Z. Earlier timestamps are broken device clocks.
    public static let earliestFixTime = Date(timeIntervalSince1970: 946_684_800)
    public static let defaultMaxClockSkew: TimeInterval = 300
    /// The environment variable every service reads `maxClockSkew` from, and its allowed values.
    public static let maxClockSkewVariable = "CHECKIN_MAX_CLOCK_SKEW"
    public static let maxClockSkewRange: ClosedRange<TimeInterval> = 0...86_400
    /// The environment variable every service reads `ignoresUnknownFixMembers` from.
    public static let ignoreUnknownFixMembersVariable = "CHECKIN_FIXES_IGNORE_UNKNOWN_MEMBERS"

    /// How far (seconds) a fix's timestamp may be ahead of the time it was received.
    /// A fix from the future would make every later fix of its device "late".
    public var maxClockSkew: TimeInterval
    /// Whether a fix (or its envelope, or a beacon sighting) may hold members the format does
    /// not have, which are then skipped. Off by default, so that a misspelt `accuarcy` is named
    /// in a refusal instead of dropped in silence; on for devices that relied on the skipping.
    /// Ingest and evaluator read the same setting, so that a fix one takes the other takes too.
    public var ignoresUnknownFixMembers: Bool

    public init(maxClockSkew: TimeInterval = Self.defaultMaxClockSkew, ignoresUnknownFixMembers: Bool = false) {
        self.maxClockSkew = maxClockSkew
        self.ignoresUnknownFixMembers = ignoresUnknownFixMembers
    }

    /// Why a project id is refused, or nil: 1 to 64 letters, digits, `-`, `_` and `.`,
    /// starting with a letter or digit, so that it reads the same in URLs, logs and shells.
    /// Narrower than other ids: the API and the CLI create projects by the same rule.
    public static func projectIdProblem(_ id: String) -> String? {
        guard (1...64).contains(id.unicodeScalars.count), id.unicodeScalars.allSatisfy(isProjectIdScalar),
            let first = id.unicodeScalars.first, first != "-", first != "_", first != "."
        else {
            return "must be 1 to 64 letters, digits, '-', '_' or '.', starting with a letter or digit"
        }
        return nil
    }

    private static func isProjectIdScalar(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "a"..."z", "A"..."Z", "0"..."9", "-", "_", ".": true
        default: false
        }
    }

    /// Why `text` cannot be an id, or nil when it can: 1 to 128 characters, none of
    /// them a control character (they break Postgres, logs and Kafka keys).
    public static func identifierProblem(_ text: String) -> String? {
        if text.isEmpty { return "must not be empty" }
        var count = 0
        for scalar in text.unicodeScalars {
            count += 1
            if isControl(scalar) { return "must not contain control characters (U+0000-U+001F, U+007F-U+009F)" }
        }
        return count > maximumIdentifierLength ? "must be at most \(maximumIdentifierLength) characters" : nil
    }

    /// Why free text (a name, a description, custom data) is refused, or nil: at most
    /// `maximumLength` characters, and no control characters besides tab, line feed
    /// and carriage return (Postgres cannot store U+0000 at all).
    public static func textProblem(_ text: String, maximumLength: Int) -> String? {
        var count = 0
        for scalar in text.unicodeScalars {
            count += 1
            if isControl(scalar), scalar != "\t", scalar != "\n", scalar != "\r" {
                return "must not contain control characters other than tab and line breaks"
            }
        }
        return count > maximumLength ? "must be at most \(maximumLength) characters" : nil
    }

    /// Why `text` cannot be a webhook endpoint URL before it is even parsed, or nil:
    /// at most 2,048 characters, no control characters and no whitespace.
    public static func urlProblem(_ text: String) -> String? {
        var count = 0
        for scalar in text.unicodeScalars {
            count += 1
            if isControl(scalar) || scalar.properties.isWhitespace {
                return "must not contain control characters or whitespace"
            }
        }
        return count > maximumURLLength ? "must be at most \(maximumURLLength) characters" : nil
    }

    /// Why a fix's timestamp is refused, or nil: not before 2000-01-01 and at most
    /// `maxClockSkew` after `receivedAt`, the time the pipeline got the fix (the HTTP
    /// request's arrival, or the Kafka record's timestamp, so that a replay of the
    /// topic decides the same).
    public func timestampProblem(_ timestamp: Date, receivedAt: Date) -> String? {
        if timestamp < Self.earliestFixTime { return "must not be before 2000-01-01T00:00:00Z" }
        if timestamp.timeIntervalSince(receivedAt) > maxClockSkew {
            return "must be at most \(Self.seconds(maxClockSkew)) s after the fix was received (\(RFC3339.format(receivedAt)))"
        }
        return nil
    }

    /// C0 and C1 control characters, and DEL.
    public static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value <= 0x1F || (0x7F...0x9F).contains(scalar.value)
    }

    static func seconds(_ value: TimeInterval) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : String(value)
    }
}
