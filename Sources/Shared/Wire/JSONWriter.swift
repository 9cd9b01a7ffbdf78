import Foundation

/// A value that writes its own wire JSON, byte for byte what `WireJSON.encoder()` writes
/// for it, so that a message's bytes never depend on which of the two wrote it.
public protocol WireJSONWritable {
    func write(to json: inout JSONWriter) throws(EncodingError)
}

extension WireJSONWritable {
    /// What `WireJSON.encoder().encode(self)` returns, without the encoder's cost: every
    /// event and fix is written once, on the hot path of the evaluator and of ingest.
    public func wireJSON() throws(EncodingError) -> [UInt8] {
        var json = JSONWriter()
        try write(to: &json)
        return json.bytes
    }
}

extension Array: WireJSONWritable where Element: WireJSONWritable {
    public func write(to json: inout JSONWriter) throws(EncodingError) {
        json.beginArray()
        for element in self { try element.write(to: &json) }
        json.endArray()
    }
}

/// JSON written straight into bytes, the way Foundation's `JSONEncoder` writes it with
/// `[.sortedKeys, .withoutEscapingSlashes]`, without its intermediate tree of values:
///
/// - Keys: the caller writes them in order of their UTF-8 bytes, as `.sortedKeys` sorts
///   them on Linux ("B" < "a" < "é"); debug builds check it. `field(_:_:)` writes a value
///   `encode(_:forKey:)` would, `fieldIfPresent(_:_:)` one `encodeIfPresent` would (nothing for nil).
/// - Doubles: `description` without a trailing ".0" (`8`, `-0`, `0.1`, `1e-05`, `1e+16`);
///   NaN and infinities throw, as the encoder's default strategy does.
/// - Strings: `"` and `\` escaped, `\b \f \n \r \t`, other control characters as `\u001f`
///   (lowercase hex); `/`, DEL and everything else (U+2028 too) as its UTF-8 bytes.
/// - Dates: RFC 3339 strings (`WireJSON`'s date strategy).
public struct JSONWriter: Sendable {
    public private(set) var bytes: [UInt8] = []
    /// Whether the last thing written was a whole value, which the next value or key
    /// follows after a comma.
    private var afterValue = false

    #if DEBUG
        /// The last key written in each open object (nil before its first), to catch a key
        /// written out of order.
        private var lastKeys: [[UInt8]?] = []
    #endif

    public init(capacity: Int = 1024) {
        bytes.reserveCapacity(capacity)
    }

    // MARK: Structure

    public mutating func beginObject() {
        separate()
        bytes.append(UInt8(ascii: "{"))
        afterValue = false
        #if DEBUG
            lastKeys.append(nil)
        #endif
    }

    public mutating func endObject() {
        bytes.append(UInt8(ascii: "}"))
        afterValue = true
        #if DEBUG
            lastKeys.removeLast()
        #endif
    }

    public mutating func beginArray() {
        separate()
        bytes.append(UInt8(ascii: "["))
        afterValue = false
    }

    public mutating func endArray() {
        bytes.append(UInt8(ascii: "]"))
        afterValue = true
    }

    /// A key named in code: an identifier, so nothing in it needs escaping.
    public mutating func key(_ name: StaticString) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        name.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
        afterValue = false
        #if DEBUG
            name.withUTF8Buffer { checkOrder(of: Array($0)) }
        #endif
    }

    /// A key from data (a zone's custom data), escaped as a string value is.
    public mutating func key(_ name: String) {
        separate()
        appendQuoted(name)
        bytes.append(UInt8(ascii: ":"))
        afterValue = false
        #if DEBUG
            checkOrder(of: Array(name.utf8))
        #endif
    }

    // MARK: Values

    public mutating func string(_ value: String) {
        separate()
        appendQuoted(value)
    }

    public mutating func bool(_ value: Bool) {
        separate()
        bytes.append(contentsOf: value ? "true".utf8 : "false".utf8)
    }

    public mutating func number(_ value: Int) {
        separate()
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        var rest = value.magnitude
        var digits = 1
        while rest >= 10 {
            rest /= 10
            digits += 1
        }
        rest = value.magnitude
        bytes.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: digits))
        var index = bytes.count
        repeat {
            index -= 1
            bytes[index] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: rest % 10)
            rest /= 10
        } while rest > 0
    }

    /// Swift's shortest round-trip `description`, less a trailing ".0": what the encoder
    /// writes, so whole numbers lose their fraction and exponents keep Swift's form.
    public mutating func number(_ value: Double) throws(EncodingError) {
        guard value.isFinite else {
            throw EncodingError.invalidValue(
                value,
                EncodingError.Context(codingPath: [], debugDescription: "Unable to encode Double.\(value) directly in JSON."))
        }
        separate()
        var text = value.description
        text.withUTF8 { utf8 in
            let dropsFraction = utf8.count > 2 && utf8[utf8.count - 2] == UInt8(ascii: ".") && utf8[utf8.count - 1] == UInt8(ascii: "0")
            bytes.append(contentsOf: dropsFraction ? UnsafeBufferPointer(rebasing: utf8.dropLast(2)) : utf8)
        }
    }

    public mutating func date(_ value: Date) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        RFC3339.append(value, to: &bytes)
        bytes.append(UInt8(ascii: "\""))
    }

    /// A dictionary as an object, its keys in the order of their UTF-8 bytes.
    public mutating func object(_ dictionary: [String: String]) {
        beginObject()
        for (key, value) in dictionary.sorted(by: { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }) {
            self.key(key)
            string(value)
        }
        endObject()
    }

    // MARK: Fields

    public mutating func field(_ key: StaticString, _ value: String) {
        self.key(key)
        string(value)
    }

    public mutating func field(_ key: StaticString, _ value: Bool) {
        self.key(key)
        bool(value)
    }

    public mutating func field(_ key: StaticString, _ value: Int) {
        self.key(key)
        number(value)
    }

    public mutating func field(_ key: StaticString, _ value: Double) throws(EncodingError) {
        self.key(key)
        try number(value)
    }

    public mutating func field(_ key: StaticString, _ value: Date) {
        self.key(key)
        date(value)
    }

    public mutating func field(_ key: StaticString, _ value: [String: String]) {
        self.key(key)
        object(value)
    }

    public mutating func field(_ key: StaticString, _ values: [String]) {
        self.key(key)
        beginArray()
        for value in values { string(value) }
        endArray()
    }

    public mutating func fieldIfPresent(_ key: StaticString, _ values: [String]?) {
        if let values { field(key, values) }
    }

    public mutating func field(_ key: StaticString, _ value: some WireJSONWritable) throws(EncodingError) {
        self.key(key)
        try value.write(to: &self)
    }

    public mutating func fieldIfPresent(_ key: StaticString, _ value: String?) {
        if let value { field(key, value) }
    }

    public mutating func fieldIfPresent(_ key: StaticString, _ value: Bool?) {
        if let value { field(key, value) }
    }

    public mutating func fieldIfPresent(_ key: StaticString, _ value: Int?) {
        if let value { field(key, value) }
    }

    public mutating func fieldIfPresent(_ key: StaticString, _ value: Double?) throws(EncodingError) {
        if let value { try field(key, value) }
    }

    public mutating func fieldIfPresent(_ key: StaticString, _ value: Date?) {
        if let value { field(key, value) }
    }

    public mutating func fieldIfPresent(_ key: StaticString, _ value: (some WireJSONWritable)?) throws(EncodingError) {
        if let value { try field(key, value) }
    }

    // MARK: Bytes

    /// Starts a key or a value: a comma first if it follows another value, never after
    /// an opening bracket or a key. What starts here is taken as a whole value; a key or
    /// an opening bracket says otherwise once written.
    private mutating func separate() {
        if afterValue { bytes.append(UInt8(ascii: ",")) }
        afterValue = true
    }

    private mutating func appendQuoted(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        var text = text
        text.withUTF8 { utf8 in
            var plain = 0
            for index in utf8.indices {
                let byte = utf8[index]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[plain..<index]))
                appendEscaped(byte)
                plain = index + 1
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[plain...]))
        }
        bytes.append(UInt8(ascii: "\""))
    }

    private mutating func appendEscaped(_ byte: UInt8) {
        let backslash = UInt8(ascii: "\\")
        switch byte {
        case UInt8(ascii: "\""), backslash: bytes.append(contentsOf: [backslash, byte])
        case 0x08: bytes.append(contentsOf: [backslash, UInt8(ascii: "b")])
        case 0x09: bytes.append(contentsOf: [backslash, UInt8(ascii: "t")])
        case 0x0A: bytes.append(contentsOf: [backslash, UInt8(ascii: "n")])
        case 0x0C: bytes.append(contentsOf: [backslash, UInt8(ascii: "f")])
        case 0x0D: bytes.append(contentsOf: [backslash, UInt8(ascii: "r")])
        default:
            func hex(_ digit: UInt8) -> UInt8 { digit < 10 ? UInt8(ascii: "0") + digit : UInt8(ascii: "a") + digit - 10 }
            bytes.append(contentsOf: [backslash, UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")])
            bytes.append(contentsOf: [hex(byte >> 4), hex(byte & 0x0F)])
        }
    }

    #if DEBUG
        private mutating func checkOrder(of key: [UInt8]) {
            guard let open = lastKeys.indices.last else { return }
            if let previous = lastKeys[open] {
                precondition(
                    previous.lexicographicallyPrecedes(key),
                    "key \"\(String(decoding: key, as: UTF8.self))\" after \"\(String(decoding: previous, as: UTF8.self))\": keys go in the order of their UTF-8 bytes"
                )
            }
            lastKeys[open] = key
        }
    #endif
}
