import Foundation
import Shared

/// Random fix documents for comparing decoders: valid fixes with every optional member
/// present, absent or null and numbers in many spellings, invalid ones (wrong types,
/// out-of-range values, bad timestamps, bad ids, duplicate and unknown members), and
/// bytes damaged after writing (cut short, bytes changed, added or removed).
struct FixJSONGenerator {
    var random: SeededRandom
    var writer = JSONTextWriter()
    /// When the generated fixes count as received: 2026-11-22T10:05:00Z.
    static let receivedAt = Date(timeIntervalSince1970: 1_795_341_900)

    init(seed: UInt64) {
        random = SeededRandom(seed: seed)
    }

    /// One document: mostly a fix object, sometimes something else, sometimes damaged.
    mutating func document() -> [UInt8] {
        let value: JSONText
        switch random.int(0...19) {
        case 0: value = .array([fix()])
        case 1: value = random.pick([.string("fix"), .number("1"), .boolean(true), .null, .array([]), .raw([])])
        default: value = fix()
        }
        return damaged(writer.write(value, using: &random))
    }

    /// A fix object; unless `valid` says, one in three has only valid members. Its
    /// `projectId` is mostly one of `projectIds` when there are any.
    mutating func fix(projectIds: [String] = [], valid: Bool? = nil, omitsProjectId: Bool = false) -> JSONText {
        let valid = valid ?? random.oneIn(3)
        var members: [(key: String, value: JSONText)] = []
        func add(_ key: String, _ value: JSONText?) {
            if let value { members.append((key, value)) }
        }
        if !omitsProjectId {
            add(
                "projectId",
                required(projectIds.isEmpty || random.oneIn(4) ? identifier(valid: valid) : .string(random.pick(projectIds)), valid))
        }
        add("deviceId", required(identifier(valid: valid), valid))
        add("timestamp", required(timestamp(valid: valid), valid))
        add("lat", required(number(in: -90...90, valid: valid), valid))
        add("lon", required(number(in: -180...180, valid: valid), valid))
        add("accuracy", optional(number(in: 0...1_000_000, valid: valid)))
        add("speed", optional(number(in: 0...10_000, valid: valid)))
        add(
            "bearing",
            optional(
                random.oneIn(5)
                    ? .number(random.pick(["360", "360.0", "3.6e2", "36E1", "359.99999999999999999"])) : number(in: 0...360, valid: valid)))
        add("altitude", optional(number(in: -1e300...1e300, valid: valid)))
        add("source", optional(enumeration(FixSource.allCases.map(\.rawValue), valid: valid)))
        add("mode", optional(enumeration(FixMode.allCases.map(\.rawValue), valid: valid)))
        add("fixId", optional(identifier(valid: valid)))
        add("beacons", optional(beacons(valid: valid)))
        for _ in 0..<(random.oneIn(4) ? random.int(1...3) : 0) {
            members.insert((unknownKey(), anyValue(depth: 0)), at: random.int(0...members.count))
        }
        if !members.isEmpty, random.oneIn(8) {
            // A repeated member: the last one counts.
            let repeated = random.pick(members)
            let value = valid ? repeated.value : anyValue(depth: 0)
            members.insert((repeated.key, value), at: random.int(0...members.count))
        }
        if !valid || random.oneIn(2) { members.shuffle(using: &random) }
        return .object(members)
    }

    private mutating func required(_ value: JSONText, _ valid: Bool) -> JSONText? {
        if valid || !random.oneIn(12) { return value }
        return random.oneIn(2) ? nil : .null
    }

    private mutating func optional(_ value: JSONText) -> JSONText? {
        switch random.int(0...5) {
        case 0, 1: return nil
        case 2: return .null
        default: return value
        }
    }

    /// A value of the wrong kind for whatever member it lands in, now and then.
    private mutating func wrongKind() -> JSONText {
        random.pick([.boolean(true), .boolean(false), .string("1"), .number("1"), .array([]), .object([]), .string("")])
    }

    private static let identifierAlphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:")
    private static let validIdentifiers = [
        "p", "device-42", "é", "e\u{301}", "😀", "设备-7", "ß", "ﬁx", "\u{A0}x", "Ω\u{2126}", "x/y\\z\"q",
        String(repeating: "d", count: 128), String(repeating: "😀", count: 128),
    ]
    private static let invalidIdentifiers = [
        "", String(repeating: "d", count: 129), String(repeating: "é", count: 129), "dev\u{0}ice", "line\nbreak",
        "\u{7F}", "p\u{85}", "\u{9F}", "\u{FEFF}", "\u{FEFF}p", "tab\t",
    ]

    mutating func identifier(valid: Bool) -> JSONText {
        if !valid, random.oneIn(6) { return wrongKind() }
        switch random.int(0...(valid ? 3 : 5)) {
        case 0, 1: return .string(String((0..<random.int(1...16)).map { _ in random.pick(Self.identifierAlphabet) }))
        case 2, 3: return .string(random.pick(Self.validIdentifiers))
        default: return .string(random.pick(Self.invalidIdentifiers))
        }
    }

    mutating func timestamp(valid: Bool) -> JSONText {
        if !valid, random.oneIn(5) {
            return random.pick([
                wrongKind(), .number("1795341600"), .string("yesterday"), .string("2026-11-22"), .string("2026-02-30T00:00:00Z"),
                .string("2026-11-22T10:00:00+0100"), .string("2026-11-22T10:00:00.Z"), .string("9999-12-31T23:59:59Z"),
                .string("1999-12-31T23:59:59.999Z"), .string("2026-11-22T10:10:00.001Z"), .string("2026-11-22T23:59:60Z"),
            ])
        }
        let earliest = valid ? 946_684_800.0 : 946_684_000.0
        let latest = Self.receivedAt.timeIntervalSince1970 + (valid ? 300 : 900)
        var seconds = Double.random(in: earliest...latest, using: &random)
        if random.oneIn(3) { seconds.round(.down) }
        let offsetMinutes = random.oneIn(3) ? random.int(-14 * 60...14 * 60) : 0
        // Local time at the offset, then the offset: the same instant.
        var text = RFC3339.format(Date(timeIntervalSince1970: seconds + Double(offsetMinutes * 60)))
        text.removeLast()  // "Z"
        switch random.int(0...3) {
        case 0: text.removeLast(4)  // ".123"
        case 1: text += String((0..<random.int(1...9)).map { _ in random.pick(Array("0123456789")) })
        default: break
        }
        if random.oneIn(6) {
            text = text.replacingOccurrences(of: "T", with: random.pick(["t", " "]))
        }
        if offsetMinutes == 0, random.oneIn(2) {
            text += random.pick(["Z", "z"])
        } else {
            let magnitude = abs(offsetMinutes)
            text += (offsetMinutes < 0 ? "-" : "+") + String(format: "%02d:%02d", magnitude / 60, magnitude % 60)
        }
        return .string(text)
    }

    private static let oddNumbers = [
        "-0", "0", "-0.0", "0e0", "-0E-0", "0.000000000000000000000", "-0.000000000000000000000", "1E2", "1e-400",
        "1.00000000000000011102230246251565404236316680908203125", "89.999999999999999999", "-90.000000000000000001",
        "179.99999999999999999999", "0.1e1", "1e-7", "12345678901234567e-15", "1.7976931348623157e308",
        "123456789012345678901234567890", "-9223372036854775808", "18446744073709551615", "18446744073709551616",
        "4.9e-324", "2.2250738585072011e-308", "1." + String(repeating: "0", count: 130) + "1",
    ]
    private static let unrepresentableNumbers = ["1e400", "-1e400", "1e99999999999999999999"]

    /// A number for a member that must lie in `range`, in one of many spellings.
    mutating func number(in range: ClosedRange<Double>, valid: Bool) -> JSONText {
        if !valid, random.oneIn(6) { return wrongKind() }
        if random.oneIn(15) {
            return .number(random.pick(valid ? Self.oddNumbers : Self.oddNumbers + Self.unrepresentableNumbers))
        }
        var value: Double
        switch random.int(0...9) {
        case 0: value = random.pick([range.lowerBound, range.upperBound, range.lowerBound.nextUp, range.upperBound.nextDown])
        case 1: value = Double(random.int(Int(max(range.lowerBound, -1e15))...Int(min(range.upperBound, 1e15))))
        case 2 where !valid: value = random.pick([range.lowerBound.nextDown, range.upperBound.nextUp, -1, 1e6 + 1, 1e300])
        default: value = Double.random(in: range, using: &random)
        }
        if valid { value = min(max(value, range.lowerBound), range.upperBound) }
        return .number(spelling(of: value))
    }

    private mutating func spelling(of value: Double) -> String {
        switch random.int(0...9) {
        case 0: return String(format: "%.\(random.int(0...20))f", value)
        case 1: return String(format: "%.\(random.int(1...20))g", value)
        case 2: return String(format: "%.\(random.int(0...20))\(random.pick(["e", "E"]))", value)
        case 3 where value == value.rounded() && abs(value) < 1e18: return String(Int64(value))
        case 4: return String(format: "%.17g", value)
        default: return "\(value)"
        }
    }

    mutating func enumeration(_ names: [String], valid: Bool) -> JSONText {
        if !valid, random.oneIn(4) {
            return random.pick([wrongKind(), .string(names[0].uppercased()), .string(names[0] + " "), .string("sleepy")])
        }
        return .string(random.pick(names))
    }

    mutating func beacons(valid: Bool) -> JSONText {
        if !valid, random.oneIn(8) { return random.pick([.object([]), .string("[]"), .number("1")]) }
        let count = random.oneIn(60) ? random.pick([64, 65]) : random.int(0...3)
        return .array((0..<count).map { _ in beacon(valid: valid) })
    }

    private mutating func beacon(valid: Bool) -> JSONText {
        if !valid, random.oneIn(10) { return random.pick([.array([]), .string("beacon"), .null]) }
        var members: [(key: String, value: JSONText)] = []
        var generated = String(random.next(), radix: 16, uppercase: random.oneIn(2)) + String(random.next(), radix: 16)
        generated.insert("-", at: generated.index(generated.startIndex, offsetBy: 8))
        let uuid = random.pick([generated, "f7826da6-4fa2-4e98-8024-bc5b71e0893e", "ß-straße", "ﬁ", "é"])
        let hasUUID = random.oneIn(3) ? random.oneIn(2) : true
        if hasUUID { members.append(("uuid", !valid && random.oneIn(5) ? identifier(valid: false) : .string(uuid))) }
        if !hasUUID || random.oneIn(4) {
            members.append(
                (
                    "eddystoneId",
                    !valid && random.oneIn(5) ? identifier(valid: false) : .string(random.pick(["ABCDEF0123", "Straße", "edd"]))
                ))
        }
        for (name, range) in [("major", 0...65_535), ("minor", 0...65_535)] where random.oneIn(2) {
            members.append((name, integer(in: range, valid: valid)))
        }
        if valid || !random.oneIn(6) { members.append(("rssi", integer(in: -200...20, valid: valid))) }
        if random.oneIn(8) { members.append((unknownKey(), anyValue(depth: 2))) }
        if !valid, random.oneIn(8), let repeated = members.randomElement(using: &random) {
            members.append((repeated.key, integer(in: 0...1, valid: false)))
        }
        members.shuffle(using: &random)
        return .object(members)
    }

    private mutating func integer(in range: ClosedRange<Int>, valid: Bool) -> JSONText {
        if !valid, random.oneIn(5) {
            return random.pick([wrongKind(), .number("1.5"), .number(String(range.upperBound + 1)), .number("1e300"), .null])
        }
        let value = random.oneIn(4) ? random.pick([range.lowerBound, range.upperBound]) : random.int(range)
        return .number(random.pick(["\(value)", "\(value).0", "\(value)e0", "\(Double(value))", "\(value)0e-1", "\(value)E+0"]))
    }

    private mutating func unknownKey() -> String {
        random.pick(["extra", "Lat", "lat ", "LON", "projectid", "beacon", "note", "", "ü", "\u{FEFF}lat", "nested"])
    }

    /// Anything at all, for members nobody reads.
    mutating func anyValue(depth: Int) -> JSONText {
        if depth == 0, random.oneIn(40) {
            // Nesting around JSONSerialization's limit of 512, counted from the fix object.
            let levels = random.int(509...513)
            return .raw(Array(repeating: UInt8(ascii: "["), count: levels) + Array(repeating: UInt8(ascii: "]"), count: levels))
        }
        switch random.int(0...(depth > 2 ? 4 : 6)) {
        case 0: return .null
        case 1: return .boolean(random.oneIn(2))
        case 2: return .number(random.pick(["0", "-1.5e3", "1e400", "12345678901234567890123", "0.1"]))
        case 3: return .string(random.pick(["", "x", "é\u{FEFF}", "\u{FEFF}", "\u{1F600}"]))
        case 4: return wrongKind()
        case 5: return .array((0..<random.int(0...3)).map { _ in anyValue(depth: depth + 1) })
        default: return .object((0..<random.int(0...3)).map { _ in (unknownKey(), anyValue(depth: depth + 1)) })
        }
    }

    /// The bytes, damaged one time in four, or given another encoding now and then.
    mutating func damaged(_ bytes: [UInt8]) -> [UInt8] {
        var bytes = bytes
        if random.oneIn(4) {
            for _ in 0..<random.int(1...3) {
                let position = random.int(0...bytes.count)
                let byte = random.pick([
                    UInt8.random(in: 0...255, using: &random), UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: ","),
                    UInt8(ascii: "}"), UInt8(ascii: "]"), UInt8(ascii: "0"), UInt8(ascii: "e"), UInt8(ascii: "."), 0x00, 0x0C, 0xC3, 0xFF,
                ])
                switch random.int(0...3) {
                case 0: bytes.removeSubrange(position...)
                case 1: bytes.insert(byte, at: position)
                case 2 where position < bytes.count: bytes[position] = byte
                case 3 where position < bytes.count: bytes.remove(at: position)
                default: break
                }
            }
        } else if random.oneIn(25) {
            bytes = random.pick([[0xEF, 0xBB, 0xBF], [0x20, 0x0A], [0x7B], [0xEF, 0xBB]]) + bytes
            bytes += random.pick([[], [0x20, 0x0D, 0x0A, 0x09], [0x00], [UInt8(ascii: "x")], [UInt8(ascii: ",")]])
        } else if random.oneIn(40) {
            bytes = reencoded(bytes)
        }
        return bytes
    }

    /// The document in UTF-16 or UTF-32, with or without a byte-order mark; bytes that
    /// are not UTF-8 are dropped first.
    private mutating func reencoded(_ bytes: [UInt8]) -> [UInt8] {
        let scalars = String(decoding: bytes, as: UTF8.self).unicodeScalars.map(\.value)
        let width = random.pick([2, 4])
        let bigEndian = random.oneIn(2)
        var units: [UInt32] = []
        for scalar in scalars {
            if width == 2, scalar > 0xFFFF {
                units += [0xD800 + (scalar - 0x10000) >> 10, 0xDC00 + (scalar - 0x10000) & 0x3FF]
            } else {
                units.append(scalar)
            }
        }
        if random.oneIn(2) { units.insert(0xFEFF, at: 0) }
        var out: [UInt8] = []
        for unit in units {
            let unitBytes = (0..<width).map { UInt8(truncatingIfNeeded: unit >> (8 * $0)) }
            out += bigEndian ? unitBytes.reversed() : unitBytes
        }
        if random.oneIn(4) { out += (0..<random.int(1...3)).map { _ in UInt8(ascii: "1") } }
        return out
    }
}

extension FixJSONGenerator {
    /// Project ids that batches' API keys and their fixes share, two of them the same
    /// text spelled with different scalars.
    static let projectIds = ["p", "proj-7", "\u{E9}", "e\u{301}", "😀"]

    /// One batch body for an API key of `apiKeyProject`: `{"fixes": [ … ]}`, a bare
    /// array or something else, sometimes damaged. One in three holds only valid fixes,
    /// which take the key's project when there is one.
    mutating func batch(apiKeyProject: String?) -> [UInt8] {
        var items: [JSONText] = []
        let allValid = random.oneIn(3)
        for _ in 0..<random.int(0...5) {
            if allValid {
                items.append(fix(valid: true, omitsProjectId: apiKeyProject != nil))
            } else {
                items.append(random.oneIn(12) ? anyValue(depth: 1) : fix(projectIds: Self.projectIds))
            }
        }
        let value: JSONText
        switch random.int(0...11) {
        case 0: value = .array(items)
        case 1:
            value = random.pick([.object([("fixes", .number("5"))]), .object([("items", .array(items))]), .string("fixes"), .object([])])
        case 2: value = .object([("fixes", .array(items)), ("fixes", .array(Array(items.prefix(1))))])
        case 3: value = .object([("fixes", .array(items)), ("fixes", .null)])
        default:
            var members: [(key: String, value: JSONText)] = [("fixes", .array(items))]
            if random.oneIn(3) { members.append((unknownKey(), anyValue(depth: 1))) }
            members.shuffle(using: &random)
            value = .object(members)
        }
        return damaged(writer.write(value, using: &random))
    }

    mutating func apiKeyProject() -> String? {
        random.oneIn(4) ? nil : random.pick(Self.projectIds + (random.oneIn(10) ? [""] : []))
    }
}

extension FixJSONGenerator {
    /// A JSON number of any length and exponent, around the places where
    /// `JSONSerialization` changes how it reads one: 17 and 19 characters, 20 digits,
    /// 38 significant digits, exponents of ±128 and ±308.
    mutating func anyNumber() -> String {
        func digits(_ count: Int, leadingNonZero: Bool) -> String {
            String((0..<count).map { index in Character(String(leadingNonZero && index == 0 ? random.int(1...9) : random.int(0...9))) })
        }
        var text = random.oneIn(2) ? "-" : ""
        text +=
            random.oneIn(5) ? "0" : digits(random.pick([1, 2, 3, 5, 10, 16, 17, 18, 19, 20, 21, 25, 39, 40, 130]), leadingNonZero: true)
        if random.oneIn(2) {
            var fraction = digits(random.pick([1, 2, 5, 10, 14, 15, 16, 17, 20, 30, 40, 127, 128, 129]), leadingNonZero: false)
            if random.oneIn(4) { fraction = String(repeating: "0", count: random.int(0...fraction.count)) + fraction }
            if random.oneIn(4) { fraction += String(repeating: "0", count: random.int(1...10)) }
            text += "." + fraction
        }
        if random.oneIn(3) {
            text += random.pick(["e", "E"]) + random.pick(["", "+", "-"])
            text += random.pick([
                "0", "5", "22", "23", "126", "127", "128", "129", "254", "255", "307", "308", "309", "330", "0005",
                String(random.int(0...400)),
            ])
        }
        return text
    }
}
