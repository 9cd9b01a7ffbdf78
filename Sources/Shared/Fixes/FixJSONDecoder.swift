import Foundation

/// Decodes fixes straight from their JSON bytes in one pass, with the same outcome as
/// `FixValidator.validate(json:receivedAt:limits:)`: the same `Fix` to the bit, or the
/// same problems in the same order and words. `FixValidator` builds a Foundation object
/// tree first, which cost the evaluator a quarter of its time.
///
/// Documents are read as `JSONSerialization` on Linux reads them (see `JSONScanner`,
/// `JSONNumber`), less what RFC 8259 does not have: what it refuses, and a trailing
/// comma, is "not valid JSON" here; numbers get its very doubles and a repeated key's
/// last value counts. A member the fix format does not have is named as a problem, found
/// in the same scan (the hot path reads each body once), unless
/// `InputLimits.ignoresUnknownFixMembers` has it checked and skipped without being built.
public enum FixJSONDecoder {
    /// One fix given as JSON bytes (a Kafka record's value, a line of a replay file);
    /// `receivedAt` as in `FixValidator.validate`.
    public static func decode(
        _ bytes: UnsafeRawBufferPointer, receivedAt: Date, limits: InputLimits = InputLimits()
    ) -> Result<Fix, InvalidFix> {
        decode(utf8: bytes.assumingMemoryBound(to: UInt8.self), receivedAt: receivedAt, limits: limits)
    }

    public static func decode(_ bytes: [UInt8], receivedAt: Date, limits: InputLimits = InputLimits()) -> Result<Fix, InvalidFix> {
        bytes.withUnsafeBufferPointer { decode(utf8: $0, receivedAt: receivedAt, limits: limits) }
    }

    public static func decode<Bytes: Collection<UInt8>>(
        _ bytes: Bytes, receivedAt: Date, limits: InputLimits = InputLimits()
    ) -> Result<Fix, InvalidFix> {
        if let result = bytes.withContiguousStorageIfAvailable({ decode(utf8: $0, receivedAt: receivedAt, limits: limits) }) {
            return result
        }
        return Array(bytes).withUnsafeBufferPointer { decode(utf8: $0, receivedAt: receivedAt, limits: limits) }
    }

    static func decode(utf8 bytes: UnsafeBufferPointer<UInt8>, receivedAt: Date, limits: InputLimits) -> Result<Fix, InvalidFix> {
        let result = JSONDocument.read(bytes) { (scanner: inout JSONScanner) throws(JSONSyntaxError) -> Result<Fix, InvalidFix> in
            scanner.allowsTrailingCommas = false
            switch try scanner.valueKind() {
            case .object:
                let context = FixContext(path: FieldPath(item: nil), receivedAt: receivedAt, limits: limits)
                var members = FixMembers()
                try members.read(&scanner, context)
                try scanner.expectEnd()
                guard !members.holdsUnrepresentableNumber else { throw JSONSyntaxError() }
                return members.fix(scanner, context, projectId: nil)
            case .array:
                let holdsUnrepresentableNumber = try scanner.skipValue()
                try scanner.expectEnd()
                guard !holdsUnrepresentableNumber else { throw JSONSyntaxError() }
                return .failure(InvalidFix([FieldProblem(field: "$", problem: "must be a JSON object")]))
            default:
                // A bare string, number or literal: JSONSerialization refuses fragments.
                throw JSONSyntaxError()
            }
        }
        return result ?? .failure(InvalidFix([FieldProblem(field: "$", problem: "is not valid JSON")]))
    }
}

/// Names fields as `FixValidator` does: `lat` for a fix on its own, `fixes[2].lat`
/// for one of a batch.
struct FieldPath {
    var item: Int?

    func field(_ name: String) -> String {
        guard let item else { return name }
        return "fixes[\(item)].\(name)"
    }

    var object: String {
        guard let item else { return "$" }
        return "fixes[\(item)]"
    }

    func beacon(_ index: Int) -> String { "\(field("beacons"))[\(index)]" }
}

struct FixContext {
    var path: FieldPath
    var receivedAt: Date
    var limits: InputLimits

    var refusesUnknownMembers: Bool { !limits.ignoresUnknownFixMembers }
}

/// The names of the members an object has that its format does not, gathered as the object is
/// read. Named sorted and each once, the order a reference that reads the object into a
/// dictionary can give too; sorting, not a lookup per name, keeps an object of many of them
/// linear in its size but for the sort.
struct UnknownMembers {
    private var names: [String] = []

    mutating func append(_ name: String) {
        names.append(name)
    }

    /// One problem per name: `field` makes its path, `owner` says what it is not a member of.
    func problems(field: (String) -> String, notAMemberOf owner: String) -> [FieldProblem] {
        guard !names.isEmpty else { return [] }
        var problems: [FieldProblem] = []
        var previous: String?
        for name in names.sorted() where name != previous {
            problems.append(FieldProblem(field: field(name), problem: "is not a member of \(owner)"))
            previous = name
        }
        return problems
    }
}

/// A member's value, as much of it as validation looks at.
enum FieldValue {
    case absent, null, boolean, number(Double), string(JSONStringToken), container

    /// The value at hand, and whether it holds a number `JSONSerialization` cannot
    /// hold (the value does not matter then: the document is refused, or the member
    /// replaced by a later one of the same name).
    static func read(_ scanner: inout JSONScanner) throws(JSONSyntaxError) -> (FieldValue, holdsUnrepresentable: Bool) {
        switch try scanner.valueKind() {
        case .string: return (.string(try scanner.readString()), false)
        case .number:
            guard let number = try scanner.readNumber() else { return (.number(.nan), true) }
            return (.number(number), false)
        case .boolean:
            _ = try scanner.readBoolean()
            return (.boolean, false)
        case .null:
            try scanner.readNull()
            return (.null, false)
        case .object, .array:
            return (.container, try scanner.skipValue())
        }
    }

    var isAbsentOrNull: Bool {
        switch self {
        case .absent, .null: return true
        default: return false
        }
    }

    var isString: Bool {
        if case .string = self { return true }
        return false
    }
}

/// The members of one fix object that validation reads, each the last of its name.
struct FixMembers {
    private enum Key: CaseIterable {
        case projectId, deviceId, timestamp, lat, lon, accuracy, speed, bearing, altitude, source, mode, fixId, beacons

        var name: StaticString {
            switch self {
            case .projectId: "projectId"
            case .deviceId: "deviceId"
            case .timestamp: "timestamp"
            case .lat: "lat"
            case .lon: "lon"
            case .accuracy: "accuracy"
            case .speed: "speed"
            case .bearing: "bearing"
            case .altitude: "altitude"
            case .source: "source"
            case .mode: "mode"
            case .fixId: "fixId"
            case .beacons: "beacons"
            }
        }

        init?(_ key: JSONStringToken, in scanner: JSONScanner) {
            guard key.isVerbatim, key.isASCII else {
                let text = scanner.string(key)
                guard let found = Self.allCases.first(where: { text == $0.name.description }) else { return nil }
                self = found
                return
            }
            // One candidate by length and a telling byte, then the whole name.
            let bytes = scanner.bytes
            let candidate: Key
            switch key.end - key.start {
            case 3: candidate = bytes[key.start + 1] == UInt8(ascii: "a") ? .lat : .lon
            case 4: candidate = .mode
            case 5: candidate = bytes[key.start] == UInt8(ascii: "s") ? .speed : .fixId
            case 6: candidate = .source
            case 7: candidate = bytes[key.start + 3] == UInt8(ascii: "c") ? .beacons : .bearing
            case 8:
                switch bytes[key.start + 1] {
                case UInt8(ascii: "e"): candidate = .deviceId
                case UInt8(ascii: "c"): candidate = .accuracy
                default: candidate = .altitude
                }
            case 9: candidate = bytes[key.start] == UInt8(ascii: "p") ? .projectId : .timestamp
            default: return nil
            }
            guard scanner.verbatim(key, equals: candidate.name) else { return nil }
            self = candidate
        }
    }

    var projectId = FieldValue.absent
    var deviceId = FieldValue.absent
    var timestamp = FieldValue.absent
    var lat = FieldValue.absent
    var lon = FieldValue.absent
    var accuracy = FieldValue.absent
    var speed = FieldValue.absent
    var bearing = FieldValue.absent
    var altitude = FieldValue.absent
    var source = FieldValue.absent
    var mode = FieldValue.absent
    var fixId = FieldValue.absent
    var beacons = BeaconList.absent
    /// Kept only while unknown members are refused.
    var unknown = UnknownMembers()
    /// The document is refused unless a later member of the same name replaces this
    /// object (see `UnrepresentableMembers`).
    var holdsUnrepresentableNumber = false

    /// Reads the object at hand into these (absent) members.
    mutating func read(_ scanner: inout JSONScanner, _ context: FixContext) throws(JSONSyntaxError) {
        guard try scanner.enterObject() else { return }
        var unrepresentable = UnrepresentableMembers()
        repeat {
            let key = try scanner.readKey()
            let holds: Bool
            switch Key(key, in: scanner) {
            case .projectId: (projectId, holds) = try FieldValue.read(&scanner)
            case .deviceId: (deviceId, holds) = try FieldValue.read(&scanner)
            case .timestamp: (timestamp, holds) = try FieldValue.read(&scanner)
            case .lat: (lat, holds) = try FieldValue.read(&scanner)
            case .lon: (lon, holds) = try FieldValue.read(&scanner)
            case .accuracy: (accuracy, holds) = try FieldValue.read(&scanner)
            case .speed: (speed, holds) = try FieldValue.read(&scanner)
            case .bearing: (bearing, holds) = try FieldValue.read(&scanner)
            case .altitude: (altitude, holds) = try FieldValue.read(&scanner)
            case .source: (source, holds) = try FieldValue.read(&scanner)
            case .mode: (mode, holds) = try FieldValue.read(&scanner)
            case .fixId: (fixId, holds) = try FieldValue.read(&scanner)
            case .beacons: (beacons, holds) = try BeaconList.read(&scanner, context)
            case nil:
                if context.refusesUnknownMembers { unknown.append(scanner.string(key)) }
                holds = try scanner.skipValue()
            }
            unrepresentable.record(key, holdsUnrepresentable: holds, in: scanner)
        } while try scanner.nextMember()
        holdsUnrepresentableNumber = !unrepresentable.isEmpty
    }

    /// The fix these members make, checked in `FixValidator.validate`'s order so that
    /// problems come in its order. `projectId`, when given, stands in for a missing or
    /// null one (a batch's API key project).
    func fix(_ scanner: JSONScanner, _ context: FixContext, projectId defaultProjectId: String?) -> Result<Fix, InvalidFix> {
        let path = context.path
        var problems = unknownMemberProblems(path)

        func identifier(_ name: String, _ value: FieldValue, required: Bool, standIn: String? = nil) -> String? {
            let text: String
            switch value {
            case .string(let token): text = scanner.string(token)
            case .absent, .null:
                guard let standIn else {
                    if required { problems.append(FieldProblem(field: path.field(name), problem: "is required")) }
                    return nil
                }
                text = standIn
            default:
                problems.append(FieldProblem(field: path.field(name), problem: "must be a non-empty string"))
                return nil
            }
            guard !text.isEmpty else {
                problems.append(FieldProblem(field: path.field(name), problem: "must be a non-empty string"))
                return nil
            }
            if let problem = InputLimits.identifierProblem(text) {
                problems.append(FieldProblem(field: path.field(name), problem: problem))
                return nil
            }
            return text
        }

        func number(_ name: String, _ value: FieldValue, required: Bool, range: ClosedRange<Double>? = nil, rangeText: String = "")
            -> Double?
        {
            switch value {
            case .absent, .null:
                if required { problems.append(FieldProblem(field: path.field(name), problem: "is required")) }
                return nil
            case .number(let number):
                if let range, !range.contains(number) {
                    problems.append(FieldProblem(field: path.field(name), problem: "must be \(rangeText)"))
                    return nil
                }
                return number
            default:
                problems.append(FieldProblem(field: path.field(name), problem: "must be a finite number"))
                return nil
            }
        }

        func enumeration<E: RawRepresentable & CaseIterable>(_ name: String, _ value: FieldValue, _ type: E.Type) -> E?
        where E.RawValue == String {
            if value.isAbsentOrNull { return nil }
            if case .string(let token) = value, let found = E.allCases.first(where: { scanner.string(token, is: $0.rawValue) }) {
                return found
            }
            let allowed = E.allCases.map(\.rawValue).joined(separator: ", ")
            problems.append(FieldProblem(field: path.field(name), problem: "must be one of: \(allowed)"))
            return nil
        }

        let projectId = identifier("projectId", self.projectId, required: true, standIn: defaultProjectId)
        let deviceId = identifier("deviceId", self.deviceId, required: true)
        var timestamp: Date?
        switch self.timestamp {
        case .absent, .null:
            problems.append(FieldProblem(field: path.field("timestamp"), problem: "is required"))
        case .string(let token):
            if let date = scanner.date(token) {
                if let problem = context.limits.timestampProblem(date, receivedAt: context.receivedAt) {
                    problems.append(FieldProblem(field: path.field("timestamp"), problem: problem))
                } else {
                    timestamp = date
                }
            } else {
                problems.append(FieldProblem(field: path.field("timestamp"), problem: Self.timestampFormatProblem))
            }
        default:
            problems.append(FieldProblem(field: path.field("timestamp"), problem: Self.timestampFormatProblem))
        }
        let lat = number("lat", self.lat, required: true, range: -90...90, rangeText: "between -90 and 90")
        let lon = number("lon", self.lon, required: true, range: -180...180, rangeText: "between -180 and 180")
        let accuracy = number("accuracy", self.accuracy, required: false, range: 0...1_000_000, rangeText: "zero or more metres")
        let speed = number("speed", self.speed, required: false, range: 0...10_000, rangeText: "zero or more metres per second")
        let bearing = number("bearing", self.bearing, required: false, range: 0...360, rangeText: "between 0 and 360 degrees")
        let altitude = number("altitude", self.altitude, required: false)
        let source = enumeration("source", self.source, FixSource.self)
        let mode = enumeration("mode", self.mode, FixMode.self) ?? .normal
        let fixId = identifier("fixId", self.fixId, required: false)

        var beacons: [BeaconSighting] = []
        switch self.beacons {
        case .absent, .null: break
        case .list(let count, let sightings, let found) where count <= FixValidator.maximumBeaconsPerFix:
            beacons = sightings
            problems.append(contentsOf: found)
        default:
            problems.append(
                FieldProblem(
                    field: path.field("beacons"),
                    problem: "must be an array of at most \(FixValidator.maximumBeaconsPerFix) sightings"))
        }

        guard problems.isEmpty, let projectId, let deviceId, let timestamp, let lat, let lon else {
            return .failure(InvalidFix(problems))
        }
        return .success(
            Fix(
                projectId: projectId, deviceId: deviceId, timestamp: timestamp, lat: lat, lon: lon,
                accuracy: accuracy, speed: speed, bearing: bearing == 360 ? 0 : bearing, altitude: altitude,
                source: source, mode: mode, beacons: beacons, fixId: fixId))
    }

    /// The members the fix format does not have, named first among the fix's problems.
    func unknownMemberProblems(_ path: FieldPath) -> [FieldProblem] {
        unknown.problems(field: path.field, notAMemberOf: "a fix")
    }

    private static let timestampFormatProblem = "must be an RFC 3339 timestamp with a time zone"
}

extension JSONScanner {
    /// The string as an RFC 3339 timestamp, read from its bytes when it has no escapes.
    func date(_ token: JSONStringToken) -> Date? {
        guard token.isVerbatim else { return RFC3339.parse(string(token)) }
        return RFC3339.parse(utf8: UnsafeBufferPointer(rebasing: bytes[token.start..<token.end]))
    }
}
