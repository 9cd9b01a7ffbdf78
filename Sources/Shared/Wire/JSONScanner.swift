/// The input is not JSON as `JSONSerialization` reads it: a syntax error, nesting
/// deeper than 512, a string that is not valid UTF-8, or a number it cannot hold.
struct JSONSyntaxError: Error {}

/// The keys of an object's members whose values hold a number `JSONSerialization`
/// cannot hold (`1e400`). It converts numbers only after parsing into dictionaries, so
/// such a member makes the document invalid unless a later member of the same name
/// (compared as `String`s, as dictionary keys are) replaces it first.
///
/// A set, so that an object of many such members costs time linear in its size: `String`
/// hashing agrees with `String` equality (canonical equivalence), as the dictionary's does.
struct UnrepresentableMembers {
    private var keys: Set<String> = []

    var isEmpty: Bool { keys.isEmpty }

    mutating func record(_ key: JSONStringToken, holdsUnrepresentable: Bool, in scanner: JSONScanner) {
        if holdsUnrepresentable {
            keys.insert(scanner.string(key))
        } else if !keys.isEmpty {
            keys.remove(scanner.string(key))
        }
    }
}

/// Where a JSON string's contents lie in the document, quotes excluded.
struct JSONStringToken {
    var start: Int
    var end: Int
    /// No escapes and no leading byte-order mark: the bytes are the string's UTF-8 as they stand.
    var isVerbatim: Bool
    var isASCII: Bool
}

/// One pass over a UTF-8 JSON document, accepting exactly what `JSONSerialization`
/// accepts on Linux (swift-corelibs-foundation), so that a decoder built on it
/// refuses the same documents as one built on `JSONSerialization`: trailing commas
/// in arrays and objects are allowed, only space, tab, CR and LF are whitespace,
/// containers nest at most 512 deep, strings must be valid UTF-8 without raw control
/// characters, and every number that ends up in the document must be one it can hold
/// (see `UnrepresentableMembers`).
///
/// Reading a value the caller does not want validates it without allocating.
struct JSONScanner {
    static let maximumDepth = 512

    let bytes: UnsafeBufferPointer<UInt8>
    private(set) var index = 0
    private var depth = 0
    /// False for RFC 8259 alone (`StrictJSON`, fixes): a comma must be followed by another member or element.
    var allowsTrailingCommas = true

    init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    enum ValueKind {
        case object, array, string, number, boolean, null
    }

    // MARK: Structure

    mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: " "), UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: "\t"): index += 1
            default: return
            }
        }
    }

    /// After the top-level value only whitespace may follow.
    mutating func expectEnd() throws(JSONSyntaxError) {
        skipWhitespace()
        guard index == bytes.count else { throw JSONSyntaxError() }
    }

    /// What the next value is, whitespace skipped, without consuming it.
    mutating func valueKind() throws(JSONSyntaxError) -> ValueKind {
        skipWhitespace()
        guard index < bytes.count else { throw JSONSyntaxError() }
        switch bytes[index] {
        case UInt8(ascii: "{"): return .object
        case UInt8(ascii: "["): return .array
        case UInt8(ascii: "\""): return .string
        case UInt8(ascii: "t"), UInt8(ascii: "f"): return .boolean
        case UInt8(ascii: "n"): return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number
        default: throw JSONSyntaxError()
        }
    }

    /// Consumes the `{` at hand; false when the object is empty (its `}` consumed too).
    mutating func enterObject() throws(JSONSyntaxError) -> Bool {
        try enter(closingWith: UInt8(ascii: "}"))
    }

    /// Consumes the `[` at hand; false when the array is empty (its `]` consumed too).
    mutating func enterArray() throws(JSONSyntaxError) -> Bool {
        try enter(closingWith: UInt8(ascii: "]"))
    }

    private mutating func enter(closingWith closing: UInt8) throws(JSONSyntaxError) -> Bool {
        guard depth < Self.maximumDepth else { throw JSONSyntaxError() }
        depth += 1
        index += 1
        skipWhitespace()
        guard index < bytes.count else { throw JSONSyntaxError() }
        if bytes[index] == closing {
            index += 1
            depth -= 1
            return false
        }
        return true
    }

    /// A member's key and the colon after it.
    mutating func readKey() throws(JSONSyntaxError) -> JSONStringToken {
        let key = try readString()
        skipWhitespace()
        guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw JSONSyntaxError() }
        index += 1
        return key
    }

    /// After a member's value: true when another member follows, false when the
    /// object has ended (a trailing comma allowed).
    mutating func nextMember() throws(JSONSyntaxError) -> Bool {
        try next(closingWith: UInt8(ascii: "}"))
    }

    /// After an element: true when another element follows, false when the array
    /// has ended (a trailing comma allowed).
    mutating func nextElement() throws(JSONSyntaxError) -> Bool {
        try next(closingWith: UInt8(ascii: "]"))
    }

    private mutating func next(closingWith closing: UInt8) throws(JSONSyntaxError) -> Bool {
        skipWhitespace()
        guard index < bytes.count else { throw JSONSyntaxError() }
        if bytes[index] == UInt8(ascii: ",") {
            index += 1
            skipWhitespace()
            guard index < bytes.count else { throw JSONSyntaxError() }
            guard bytes[index] == closing else { return true }
            guard allowsTrailingCommas else { throw JSONSyntaxError() }
        } else if bytes[index] != closing {
            throw JSONSyntaxError()
        }
        index += 1
        depth -= 1
        return false
    }

    /// Validates the next value, whatever it is, and moves past it. True when it holds
    /// a number `JSONSerialization` cannot hold.
    @discardableResult
    mutating func skipValue() throws(JSONSyntaxError) -> Bool {
        switch try valueKind() {
        case .string: _ = try readString()
        case .number: return try readNumber() == nil
        case .boolean: _ = try readBoolean()
        case .null: try readNull()
        case .object:
            guard try enterObject() else { return false }
            var unrepresentable = UnrepresentableMembers()
            repeat {
                let key = try readKey()
                unrepresentable.record(key, holdsUnrepresentable: try skipValue(), in: self)
            } while try nextMember()
            return !unrepresentable.isEmpty
        case .array:
            guard try enterArray() else { return false }
            var holdsUnrepresentable = false
            repeat {
                if try skipValue() { holdsUnrepresentable = true }
            } while try nextElement()
            return holdsUnrepresentable
        }
        return false
    }

    // MARK: Scalars

    mutating func readBoolean() throws(JSONSyntaxError) -> Bool {
        if bytes[index] == UInt8(ascii: "t") {
            try readLiteral("true")
            return true
        }
        try readLiteral("false")
        return false
    }

    mutating func readNull() throws(JSONSyntaxError) {
        try readLiteral("null")
    }

    private mutating func readLiteral(_ literal: StaticString) throws(JSONSyntaxError) {
        let count = literal.utf8CodeUnitCount
        guard bytes.count - index >= count else { throw JSONSyntaxError() }
        for offset in 0..<count where bytes[index + offset] != literal.utf8Start[offset] {
            throw JSONSyntaxError()
        }
        index += count
    }

    /// A number as `JSONSerialization` would give it (see `JSONNumber`); nil for one it
    /// cannot hold.
    mutating func readNumber() throws(JSONSyntaxError) -> Double? {
        let start = index
        var cursor = index
        func digits() {
            while cursor < bytes.count, JSONNumber.isDigit(bytes[cursor]) { cursor += 1 }
        }
        func atDigit() -> Bool { cursor < bytes.count && JSONNumber.isDigit(bytes[cursor]) }

        if bytes[cursor] == UInt8(ascii: "-") { cursor += 1 }
        guard atDigit() else { throw JSONSyntaxError() }
        if bytes[cursor] == UInt8(ascii: "0") { cursor += 1 } else { digits() }
        if cursor < bytes.count, bytes[cursor] == UInt8(ascii: ".") {
            cursor += 1
            guard atDigit() else { throw JSONSyntaxError() }
            digits()
        }
        if cursor < bytes.count, bytes[cursor] | 0x20 == UInt8(ascii: "e") {
            cursor += 1
            if cursor < bytes.count, bytes[cursor] == UInt8(ascii: "+") || bytes[cursor] == UInt8(ascii: "-") { cursor += 1 }
            guard atDigit() else { throw JSONSyntaxError() }
            digits()
        }
        // A number ends only where whitespace, a comma or a closing bracket follows.
        guard cursor < bytes.count else { throw JSONSyntaxError() }
        switch bytes[cursor] {
        case UInt8(ascii: " "), UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: "\t"), UInt8(ascii: ","),
            UInt8(ascii: "]"), UInt8(ascii: "}"):
            break
        default:
            throw JSONSyntaxError()
        }
        index = cursor
        return JSONNumber.value(UnsafeBufferPointer(rebasing: bytes[start..<cursor]))
    }

    /// Validates the string at hand and returns where its contents lie.
    mutating func readString() throws(JSONSyntaxError) -> JSONStringToken {
        guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw JSONSyntaxError() }
        index += 1
        let start = index
        var isVerbatim = !startsWithByteOrderMark(at: start)
        var isASCII = true
        while index < bytes.count {
            // Eight bytes at a time up to the first that ends or escapes the string, is a
            // control character or is not ASCII.
            while bytes.count - index >= 8 {
                let word = UInt64(littleEndian: UnsafeRawPointer(bytes.baseAddress! + index).loadUnaligned(as: UInt64.self))
                let special = Self.specialBytes(word)
                guard special == 0 else {
                    index += special.trailingZeroBitCount / 8
                    break
                }
                index += 8
            }
            guard index < bytes.count else { break }
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                index += 1
                return JSONStringToken(start: start, end: index - 1, isVerbatim: isVerbatim, isASCII: isASCII)
            } else if byte == UInt8(ascii: "\\") {
                isVerbatim = false
                index = try escape(at: index).next
            } else if byte < 0x20 {
                throw JSONSyntaxError()
            } else if byte < 0x80 {
                index += 1
            } else {
                isASCII = false
                index = try endOfUTF8Sequence(at: index)
            }
        }
        throw JSONSyntaxError()
    }

    /// The high bit of each byte of a word that ends or escapes a string, is a control
    /// character or is not ASCII. Only the lowest one is sure: the borrows of the
    /// subtractions may mark bytes above it too.
    @inline(__always)
    private static func specialBytes(_ word: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        func zeroBytes(_ value: UInt64) -> UInt64 { (value &- ones) & ~value & highs }
        let belowSpace = (word &- ones &* 0x20) & ~word & highs
        return word & highs | belowSpace | zeroBytes(word ^ (ones &* 0x22)) | zeroBytes(word ^ (ones &* 0x5C))
    }

    /// The string's value. `JSONSerialization` builds a string from the runs between
    /// escapes and drops a byte-order mark that starts a run; so does this.
    func string(_ token: JSONStringToken) -> String {
        let contents = UnsafeBufferPointer(rebasing: bytes[token.start..<token.end])
        if token.isVerbatim { return String(decoding: contents, as: UTF8.self) }
        var utf8: [UInt8] = []
        utf8.reserveCapacity(contents.count)
        var cursor = token.start
        var runStart = true
        while cursor < token.end {
            if runStart, startsWithByteOrderMark(at: cursor) { cursor += 3 }
            runStart = false
            guard cursor < token.end else { break }
            if bytes[cursor] == UInt8(ascii: "\\") {
                // Validated by readString: cannot fail here.
                guard let (scalar, next) = try? escape(at: cursor) else { break }
                utf8.append(contentsOf: String(scalar).utf8)
                cursor = next
                runStart = true
            } else {
                utf8.append(bytes[cursor])
                cursor += 1
            }
        }
        return String(decoding: utf8, as: UTF8.self)
    }

    /// Whether the string's value is `text`, compared as `String`s compare.
    func string(_ token: JSONStringToken, is text: String) -> Bool {
        guard token.isVerbatim, token.isASCII else { return string(token) == text }
        var text = text
        return text.withUTF8 { utf8 in
            guard utf8.count == token.end - token.start else { return false }
            for offset in 0..<utf8.count where utf8[offset] != bytes[token.start + offset] {
                return false
            }
            return true
        }
    }

    /// Whether a verbatim string's bytes are `text`'s.
    func verbatim(_ token: JSONStringToken, equals text: StaticString) -> Bool {
        guard token.end - token.start == text.utf8CodeUnitCount else { return false }
        for offset in 0..<text.utf8CodeUnitCount where bytes[token.start + offset] != text.utf8Start[offset] {
            return false
        }
        return true
    }

    private func startsWithByteOrderMark(at position: Int) -> Bool {
        bytes.count - position >= 3 && bytes[position] == 0xEF && bytes[position + 1] == 0xBB && bytes[position + 2] == 0xBF
    }

    /// The escape sequence starting at the backslash at `position`: its scalar and
    /// the position after it. A high surrogate must be followed by an escaped low one.
    private func escape(at position: Int) throws(JSONSyntaxError) -> (scalar: Unicode.Scalar, next: Int) {
        guard position + 1 < bytes.count else { throw JSONSyntaxError() }
        switch bytes[position + 1] {
        case UInt8(ascii: "\""): return ("\"", position + 2)
        case UInt8(ascii: "\\"): return ("\\", position + 2)
        case UInt8(ascii: "/"): return ("/", position + 2)
        case UInt8(ascii: "b"): return ("\u{08}", position + 2)
        case UInt8(ascii: "f"): return ("\u{0C}", position + 2)
        case UInt8(ascii: "n"): return ("\n", position + 2)
        case UInt8(ascii: "r"): return ("\r", position + 2)
        case UInt8(ascii: "t"): return ("\t", position + 2)
        case UInt8(ascii: "u"):
            let high = try hexQuad(at: position + 2)
            if high & 0xFC00 == 0xD800 {
                guard position + 7 < bytes.count, bytes[position + 6] == UInt8(ascii: "\\"), bytes[position + 7] == UInt8(ascii: "u")
                else { throw JSONSyntaxError() }
                let low = try hexQuad(at: position + 8)
                guard low & 0xFC00 == 0xDC00,
                    let scalar = Unicode.Scalar((UInt32(high) - 0xD800) * 0x400 + (UInt32(low) - 0xDC00) + 0x10000)
                else { throw JSONSyntaxError() }
                return (scalar, position + 12)
            }
            guard let scalar = Unicode.Scalar(high) else { throw JSONSyntaxError() }
            return (scalar, position + 6)
        default:
            throw JSONSyntaxError()
        }
    }

    private func hexQuad(at position: Int) throws(JSONSyntaxError) -> UInt16 {
        guard position + 4 <= bytes.count else { throw JSONSyntaxError() }
        var value: UInt16 = 0
        for offset in 0..<4 {
            let byte = bytes[position + offset]
            let nibble: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = byte - UInt8(ascii: "0")
            case UInt8(ascii: "A")...UInt8(ascii: "F"): nibble = byte - UInt8(ascii: "A") + 10
            case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = byte - UInt8(ascii: "a") + 10
            default: throw JSONSyntaxError()
            }
            value = value << 4 | UInt16(nibble)
        }
        return value
    }

    /// The end of the well-formed UTF-8 sequence (Unicode table 3-7) whose lead byte,
    /// 0x80 or above, is at `position`.
    private func endOfUTF8Sequence(at position: Int) throws(JSONSyntaxError) -> Int {
        let lead = bytes[position]
        let length: Int
        var secondRange: ClosedRange<UInt8> = 0x80...0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0:
            length = 3
            secondRange = 0xA0...0xBF
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED:
            length = 3
            secondRange = 0x80...0x9F
        case 0xF0:
            length = 4
            secondRange = 0x90...0xBF
        case 0xF1...0xF3: length = 4
        case 0xF4:
            length = 4
            secondRange = 0x80...0x8F
        default: throw JSONSyntaxError()
        }
        guard bytes.count - position >= length, secondRange.contains(bytes[position + 1]) else { throw JSONSyntaxError() }
        for offset in 2..<length where bytes[position + offset] & 0xC0 != 0x80 {
            throw JSONSyntaxError()
        }
        return position + length
    }
}
