import Foundation

/// One thing wrong with one field of an incoming message, named by its JSON path
/// (`fixes[2].lat`) so that a client can fix exactly that.
public struct FieldProblem: Sendable, Equatable, Codable, CustomStringConvertible {
    public var field: String
    public var problem: String

    public init(field: String, problem: String) {
        self.field = field
        self.problem = problem
    }

    public var description: String { "\(field): \(problem)" }
}

/// Why a message is not a valid fix: every problem found, not just the first.
public struct InvalidFix: Error, Sendable, Equatable, CustomStringConvertible {
    public var problems: [FieldProblem]

    public init(_ problems: [FieldProblem]) {
        self.problems = problems
    }

    public var description: String { problems.map(\.description).joined(separator: "; ") }
}

/// Turns untrusted JSON into `Fix` values, collecting every problem instead of
/// stopping at the first, because a client fixing its payload wants them all.
///
/// The reference for `FixJSONDecoder`, which Ingest, `checkin replay` and the
/// Evaluator use and which must answer exactly as this does over `JSONSerialization`
/// (less trailing commas, which RFC 8259 does not have), so all reject the same things
/// with the same words; the limits themselves are `InputLimits`'.
public enum FixValidator {
    public static let maximumBeaconsPerFix = 64
    /// The members of the fix format; a fix with another is refused unless
    /// `InputLimits.ignoresUnknownFixMembers`.
    public static let members: Set<String> = [
        "projectId", "deviceId", "timestamp", "lat", "lon", "accuracy", "speed", "bearing", "altitude", "source", "mode",
        "fixId", "beacons",
    ]
    public static let beaconMembers: Set<String> = ["uuid", "major", "minor", "eddystoneId", "rssi"]

    /// Validates one fix given as a JSON object. `receivedAt` is when the pipeline got
    /// the fix (see `InputLimits.timestampProblem`): a parameter, not the clock, so that
    /// a replay of the same records decides the same.
    public static func validate(
        _ value: Any, path: String = "", receivedAt: Date, limits: InputLimits = InputLimits()
    ) -> Result<Fix, InvalidFix> {
        var problems: [FieldProblem] = []
        func field(_ name: String) -> String { path.isEmpty ? name : "\(path).\(name)" }
        guard let object = value as? [String: Any] else {
            return .failure(InvalidFix([FieldProblem(field: path.isEmpty ? "$" : path, problem: "must be a JSON object")]))
        }
        let refusesUnknownMembers = !limits.ignoresUnknownFixMembers
        if refusesUnknownMembers { problems = unknownMemberProblems(of: object, path: path) }

        func identifier(_ name: String, required: Bool) -> String? {
            guard let raw = object[name], !(raw is NSNull) else {
                if required { problems.append(FieldProblem(field: field(name), problem: "is required")) }
                return nil
            }
            guard let text = raw as? String, !text.isEmpty else {
                problems.append(FieldProblem(field: field(name), problem: "must be a non-empty string"))
                return nil
            }
            if let problem = InputLimits.identifierProblem(text) {
                problems.append(FieldProblem(field: field(name), problem: problem))
                return nil
            }
            return text
        }

        func number(_ name: String, required: Bool, range: ClosedRange<Double>? = nil, rangeText: String = "")
            -> Double?
        {
            guard let raw = object[name], !(raw is NSNull) else {
                if required { problems.append(FieldProblem(field: field(name), problem: "is required")) }
                return nil
            }
            guard !isBoolean(raw), let value = Self.double(raw), value.isFinite else {
                problems.append(FieldProblem(field: field(name), problem: "must be a finite number"))
                return nil
            }
            if let range, !range.contains(value) {
                problems.append(FieldProblem(field: field(name), problem: "must be \(rangeText)"))
                return nil
            }
            return value
        }

        func enumeration<E: RawRepresentable & CaseIterable>(_ name: String, _ type: E.Type) -> E?
        where E.RawValue == String {
            guard let raw = object[name], !(raw is NSNull) else { return nil }
            guard let text = raw as? String, let value = E(rawValue: text) else {
                let allowed = E.allCases.map(\.rawValue).joined(separator: ", ")
                problems.append(FieldProblem(field: field(name), problem: "must be one of: \(allowed)"))
                return nil
            }
            return value
        }

        let projectId = identifier("projectId", required: true)
        let deviceId = identifier("deviceId", required: true)
        var timestamp: Date?
        if let raw = object["timestamp"], !(raw is NSNull) {
            if let text = raw as? String, let date = RFC3339.parse(text) {
                if let problem = limits.timestampProblem(date, receivedAt: receivedAt) {
                    problems.append(FieldProblem(field: field("timestamp"), problem: problem))
                } else {
                    timestamp = date
                }
            } else {
                problems.append(
                    FieldProblem(field: field("timestamp"), problem: "must be an RFC 3339 timestamp with a time zone"))
            }
        } else {
            problems.append(FieldProblem(field: field("timestamp"), problem: "is required"))
        }
        let lat = number("lat", required: true, range: -90...90, rangeText: "between -90 and 90")
        let lon = number("lon", required: true, range: -180...180, rangeText: "between -180 and 180")
        let accuracy = number("accuracy", required: false, range: 0...1_000_000, rangeText: "zero or more metres")
        let speed = number("speed", required: false, range: 0...10_000, rangeText: "zero or more metres per second")
        let bearing = number("bearing", required: false, range: 0...360, rangeText: "between 0 and 360 degrees")
        let altitude = number("altitude", required: false)
        let source = enumeration("source", FixSource.self)
        let mode = enumeration("mode", FixMode.self) ?? .normal
        let fixId = identifier("fixId", required: false)

        var beacons: [BeaconSighting] = []
        if let raw = object["beacons"], !(raw is NSNull) {
            if let list = raw as? [Any], list.count <= maximumBeaconsPerFix {
                for (index, item) in list.enumerated() {
                    switch validateBeacon(item, path: "\(field("beacons"))[\(index)]", refusesUnknownMembers: refusesUnknownMembers) {
                    case .success(let beacon): beacons.append(beacon)
                    case .failure(let found): problems.append(contentsOf: found.problems)
                    }
                }
            } else {
                problems.append(
                    FieldProblem(
                        field: field("beacons"), problem: "must be an array of at most \(maximumBeaconsPerFix) sightings"))
            }
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

    /// Validates one fix given as JSON bytes (a Kafka record's value, whose timestamp is `receivedAt`).
    public static func validate(
        json: some DataProtocol, receivedAt: Date, limits: InputLimits = InputLimits()
    ) -> Result<Fix, InvalidFix> {
        let data = Data(json)
        guard let value = try? JSONSerialization.jsonObject(with: data, options: []), !hasTrailingComma(data) else {
            return .failure(InvalidFix([FieldProblem(field: "$", problem: "is not valid JSON")]))
        }
        return validate(value, receivedAt: receivedAt, limits: limits)
    }

    /// The fix's members the format does not have, sorted by name; `path` as in `validate`.
    public static func unknownMemberProblems(of object: [String: Any], path: String) -> [FieldProblem] {
        object.keys.filter { !members.contains($0) }.sorted().map {
            FieldProblem(field: path.isEmpty ? $0 : "\(path).\($0)", problem: "is not a member of a fix")
        }
    }

    /// Whether a document `JSONSerialization` reads has a comma right before a closing
    /// bracket, which it allows and RFC 8259 does not.
    public static func hasTrailingComma(_ data: Data) -> Bool {
        // As UTF-8, however the document was encoded; its syntax is left to `JSONSerialization`.
        let utf8 = data.withUnsafeBytes { raw in
            JSONDocument.read(raw.bindMemory(to: UInt8.self)) { (scanner: inout JSONScanner) throws(JSONSyntaxError) -> [UInt8] in
                Array(scanner.bytes)
            }
        }
        var inString = false
        var escaped = false
        var afterComma = false
        for byte in utf8 ?? [] {
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
                continue
            }
            switch byte {
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\r"), UInt8(ascii: "\n"): continue
            case UInt8(ascii: "]"), UInt8(ascii: "}"): if afterComma { return true }
            case UInt8(ascii: "\""): inString = true
            default: break
            }
            afterComma = byte == UInt8(ascii: ",")
        }
        return false
    }

    static func validateBeacon(_ value: Any, path: String, refusesUnknownMembers: Bool) -> Result<BeaconSighting, InvalidFix> {
        guard let object = value as? [String: Any] else {
            return .failure(InvalidFix([FieldProblem(field: path, problem: "must be a JSON object")]))
        }
        var problems: [FieldProblem] = []
        if refusesUnknownMembers {
            problems = object.keys.filter { !beaconMembers.contains($0) }.sorted().map {
                FieldProblem(field: "\(path).\($0)", problem: "is not a member of a beacon sighting")
            }
        }
        func integer(_ name: String, _ range: ClosedRange<Int>) -> Int? {
            guard let raw = object[name], !(raw is NSNull) else { return nil }
            guard !isBoolean(raw), let number = double(raw), number.rounded() == number, range.contains(Int(exactly: number) ?? Int.min)
            else {
                problems.append(
                    FieldProblem(field: "\(path).\(name)", problem: "must be an integer in \(range.lowerBound)...\(range.upperBound)"))
                return nil
            }
            return Int(number)
        }
        func beaconIdentifier(_ name: String) -> String? {
            guard let raw = object[name], !(raw is NSNull) else { return nil }
            guard let text = raw as? String else {
                problems.append(FieldProblem(field: "\(path).\(name)", problem: "must be a string"))
                return nil
            }
            if let problem = InputLimits.identifierProblem(text) {
                problems.append(FieldProblem(field: "\(path).\(name)", problem: problem))
                return nil
            }
            return text
        }
        let uuid = beaconIdentifier("uuid")
        let eddystoneId = beaconIdentifier("eddystoneId")
        let major = integer("major", 0...65_535)
        let minor = integer("minor", 0...65_535)
        let rssi = integer("rssi", -200...20)
        if object["rssi"] == nil || object["rssi"] is NSNull {
            problems.append(FieldProblem(field: "\(path).rssi", problem: "is required"))
        }
        if !(object["uuid"] is String) && !(object["eddystoneId"] is String) {
            problems.append(FieldProblem(field: "\(path).uuid", problem: "a beacon needs a uuid or an eddystoneId"))
        }
        guard problems.isEmpty, let rssi else { return .failure(InvalidFix(problems)) }
        return .success(
            BeaconSighting(uuid: uuid?.uppercased(), major: major, minor: minor, eddystoneId: eddystoneId?.lowercased(), rssi: rssi))
    }

    /// JSON `true`/`false`. `raw is Bool` cannot tell: on Linux an NSNumber holding
    /// 0 or 1 answers yes to it too, which would refuse `"lat": 0`.
    static func isBoolean(_ raw: Any) -> Bool {
        if type(of: raw) == Bool.self { return true }
        guard let number = raw as? NSNumber else { return false }
        return String(cString: number.objCType) == "c"
    }

    static func double(_ raw: Any) -> Double? {
        if let value = raw as? Double { return value }
        if let value = raw as? Int { return Double(value) }
        if let value = raw as? NSNumber { return value.doubleValue }
        return nil
    }
}
