/// A JSON value for tests, written out by `JSONTextWriter` with randomly chosen but
/// legal spellings (whitespace, escapes, trailing commas), so that a decoder is tried
/// on text no encoder would produce.
indirect enum JSONText {
    case object([(key: String, value: JSONText)])
    case array([JSONText])
    case string(String)
    /// A number exactly as written.
    case number(String)
    case literal(String)
    /// Bytes written as they are.
    case raw([UInt8])

    static let null = JSONText.literal("null")
    static func boolean(_ value: Bool) -> JSONText { .literal(value ? "true" : "false") }
}

struct JSONTextWriter {
    /// One in this many token boundaries gets whitespace.
    var whitespaceOneIn = 4
    /// One in this many characters of a string is escaped though it need not be.
    var escapeOneIn = 40
    /// One in this many non-empty containers ends with a trailing comma.
    var trailingCommaOneIn = 25

    func write(_ value: JSONText, using random: inout SeededRandom) -> [UInt8] {
        var out: [UInt8] = []
        write(value, into: &out, using: &random)
        return out
    }

    func write(_ value: JSONText, into out: inout [UInt8], using random: inout SeededRandom) {
        switch value {
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (index, member) in members.enumerated() {
                if index > 0 { separator(into: &out, using: &random) }
                space(into: &out, using: &random)
                writeString(member.key, into: &out, using: &random)
                space(into: &out, using: &random)
                out.append(UInt8(ascii: ":"))
                space(into: &out, using: &random)
                write(member.value, into: &out, using: &random)
            }
            if !members.isEmpty, random.oneIn(trailingCommaOneIn) { separator(into: &out, using: &random) }
            space(into: &out, using: &random)
            out.append(UInt8(ascii: "}"))
        case .array(let elements):
            out.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { separator(into: &out, using: &random) }
                space(into: &out, using: &random)
                write(element, into: &out, using: &random)
            }
            if !elements.isEmpty, random.oneIn(trailingCommaOneIn) { separator(into: &out, using: &random) }
            space(into: &out, using: &random)
            out.append(UInt8(ascii: "]"))
        case .string(let text):
            writeString(text, into: &out, using: &random)
        case .number(let text), .literal(let text):
            out.append(contentsOf: text.utf8)
        case .raw(let bytes):
            out.append(contentsOf: bytes)
        }
    }

    private func separator(into out: inout [UInt8], using random: inout SeededRandom) {
        space(into: &out, using: &random)
        out.append(UInt8(ascii: ","))
    }

    private func space(into out: inout [UInt8], using random: inout SeededRandom) {
        guard random.oneIn(whitespaceOneIn) else { return }
        for _ in 0..<random.int(1...3) {
            out.append(random.pick([UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r")]))
        }
    }

    private func writeString(_ text: String, into out: inout [UInt8], using random: inout SeededRandom) {
        out.append(UInt8(ascii: "\""))
        let escapeEverything = random.oneIn(50)
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0x22: out.append(contentsOf: #"\""#.utf8)
            case 0x5C: out.append(contentsOf: #"\\"#.utf8)
            case 0x08 where random.oneIn(2): out.append(contentsOf: #"\b"#.utf8)
            case 0x0C where random.oneIn(2): out.append(contentsOf: #"\f"#.utf8)
            case 0x0A where random.oneIn(2): out.append(contentsOf: #"\n"#.utf8)
            case 0x0D where random.oneIn(2): out.append(contentsOf: #"\r"#.utf8)
            case 0x09 where random.oneIn(2): out.append(contentsOf: #"\t"#.utf8)
            case 0x2F where random.oneIn(3): out.append(contentsOf: #"\/"#.utf8)
            case let value where value < 0x20 || escapeEverything || random.oneIn(escapeOneIn):
                if value > 0xFFFF {
                    let offset = value - 0x10000
                    escape(0xD800 + offset >> 10, into: &out, using: &random)
                    escape(0xDC00 + offset & 0x3FF, into: &out, using: &random)
                } else {
                    escape(value, into: &out, using: &random)
                }
            default:
                UTF8.encode(scalar) { out.append($0) }
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    private func escape(_ unit: UInt32, into out: inout [UInt8], using random: inout SeededRandom) {
        var hex = String(unit, radix: 16, uppercase: random.oneIn(2))
        hex = String(repeating: "0", count: 4 - hex.count) + hex
        out.append(contentsOf: "\\u\(hex)".utf8)
    }
}
