#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An IPv4 or IPv6 address as numbers, so that every way of writing one
/// (`2130706433`, `0x7f.1`, `[::ffff:127.0.0.1]`) is judged by the same value.
public enum IPAddress: Sendable, Hashable, CustomStringConvertible {
    case v4(UInt32)
    /// Network byte order.
    case v6([UInt8])

    /// Reads a host the way browsers and `inet_aton` do: an IPv6 literal (brackets
    /// optional), or an IPv4 address in any numeric form: dotted quads, fewer parts
    /// (`127.1`), a single number (`2130706433`), octal (`0177.0.0.1`) and hex
    /// (`0x7f.0.0.1`) parts. Returns nil for anything else (a host name).
    public init?(host: String) {
        var text = host
        if text.hasPrefix("["), text.hasSuffix("]") { text = String(text.dropFirst().dropLast()) }
        if text.contains(":") {
            guard let bytes = Self.parseIPv6(text) else { return nil }
            self = .v6(bytes)
            return
        }
        guard let value = Self.parseIPv4(text) else { return nil }
        self = .v4(value)
    }

    /// True when `host` looks numeric enough that a resolver or browser would read it
    /// as an IPv4 address (its last label is a number), whether or not it is a valid one.
    public static func looksNumeric(_ host: String) -> Bool {
        let trimmed = host.hasSuffix(".") ? String(host.dropLast()) : host
        guard let last = trimmed.split(separator: ".", omittingEmptySubsequences: false).last, !last.isEmpty else {
            return false
        }
        let lower = last.lowercased()
        if lower.hasPrefix("0x") { return lower.dropFirst(2).allSatisfy(\.isHexDigit) }
        return lower.allSatisfy { $0.isASCII && $0.isNumber }
    }

    public var description: String {
        switch self {
        case .v4(let value):
            return "\(value >> 24).\((value >> 16) & 0xff).\((value >> 8) & 0xff).\(value & 0xff)"
        case .v6(let bytes):
            var address = in6_addr()
            withUnsafeMutableBytes(of: &address) { $0.copyBytes(from: bytes) }
            var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            guard inet_ntop(AF_INET6, &address, &buffer, socklen_t(buffer.count)) != nil else { return "?" }
            return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
    }

    static func parseIPv4(_ text: String) -> UInt32? {
        var parts = text.split(separator: ".", omittingEmptySubsequences: false)
        // One trailing dot is allowed, as in a fully qualified name.
        if parts.count > 1, parts.last?.isEmpty == true { parts.removeLast() }
        guard (1...4).contains(parts.count) else { return nil }
        var numbers: [UInt64] = []
        for part in parts {
            guard let number = parseNumber(part) else { return nil }
            numbers.append(number)
        }
        // All parts but the last are single bytes; the last fills the remaining bytes.
        for number in numbers.dropLast() where number > 255 { return nil }
        let remainingBits = UInt64(8 * (5 - numbers.count))
        guard let last = numbers.last, last < (1 << remainingBits) else { return nil }
        var value: UInt64 = 0
        for (index, number) in numbers.dropLast().enumerated() { value |= number << UInt64(24 - 8 * index) }
        return UInt32(value | last)
    }

    /// A decimal, octal (leading 0) or hex (leading 0x) number, as `inet_aton` reads it.
    static func parseNumber(_ part: Substring) -> UInt64? {
        guard !part.isEmpty, part.count <= 40 else { return nil }
        let lower = part.lowercased()
        if lower.hasPrefix("0x") {
            let digits = lower.dropFirst(2)
            return digits.isEmpty ? 0 : UInt64(digits, radix: 16)
        }
        if lower.count > 1, lower.hasPrefix("0") { return UInt64(lower.dropFirst(), radix: 8) }
        guard lower.allSatisfy(\.isASCII) else { return nil }
        return UInt64(lower, radix: 10)
    }

    static func parseIPv6(_ text: String) -> [UInt8]? {
        // A zone index (`fe80::1%eth0`) names an interface of this machine: never a partner.
        guard !text.contains("%") else { return nil }
        var address = in6_addr()
        guard inet_pton(AF_INET6, text, &address) == 1 else { return nil }
        return withUnsafeBytes(of: &address) { Array($0) }
    }
}
