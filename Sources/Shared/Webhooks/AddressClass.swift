/// Why an address is not a public internet address. A webhook to one of these
/// would let a project owner reach the pipeline's own network (SSRF), so the
/// notifier refuses them unless private addresses are explicitly allowed.
public enum NonPublicAddress: String, Sendable, Equatable, CaseIterable {
    case unspecified
    case loopback
    case privateNetwork = "private"
    case sharedCGNAT = "shared (carrier-grade NAT)"
    case linkLocal = "link-local"
    case cloudMetadata = "cloud metadata"
    case multicast
    case broadcast
    case documentation
    case reserved
    case ipv4Mapped = "IPv4-mapped IPv6"
    case ipv4Compatible = "IPv4-compatible IPv6"
    case nat64Local = "local-use NAT64"
}

extension IPAddress {
    /// Nil for a public unicast address; otherwise the reason it is not one.
    /// Addresses that embed an IPv4 address (NAT64, 6to4) are judged by it.
    public var nonPublicReason: NonPublicAddress? {
        switch self {
        case .v4(let value): Self.classify(v4: value)
        case .v6(let bytes): Self.classify(v6: bytes)
        }
    }

    static func classify(v4 value: UInt32) -> NonPublicAddress? {
        func within(_ a: UInt32, _ b: UInt32, _ c: UInt32, _ d: UInt32, _ prefix: UInt32) -> Bool {
            let network = a << 24 | b << 16 | c << 8 | d
            let mask: UInt32 = prefix == 0 ? 0 : ~UInt32(0) << (32 - prefix)
            return value & mask == network
        }
        if value == 0 { return .unspecified }
        if value == 0xA9FE_A9FE { return .cloudMetadata }  // 169.254.169.254
        if value == 0xFFFF_FFFF { return .broadcast }
        let ranges: [(UInt32, UInt32, UInt32, UInt32, UInt32, NonPublicAddress)] = [
            (0, 0, 0, 0, 8, .reserved),  // "this network"
            (10, 0, 0, 0, 8, .privateNetwork),
            (100, 64, 0, 0, 10, .sharedCGNAT),
            (127, 0, 0, 0, 8, .loopback),
            (169, 254, 0, 0, 16, .linkLocal),
            (172, 16, 0, 0, 12, .privateNetwork),
            (192, 0, 0, 0, 24, .reserved),  // IETF protocol assignments
            (192, 0, 2, 0, 24, .documentation),
            (192, 88, 99, 0, 24, .reserved),  // former 6to4 relays
            (192, 168, 0, 0, 16, .privateNetwork),
            (198, 18, 0, 0, 15, .reserved),  // benchmarking
            (198, 51, 100, 0, 24, .documentation),
            (203, 0, 113, 0, 24, .documentation),
            (224, 0, 0, 0, 4, .multicast),
            (240, 0, 0, 0, 4, .reserved),
        ]
        return ranges.first { within($0.0, $0.1, $0.2, $0.3, $0.4) }?.5
    }

    static func classify(v6 bytes: [UInt8]) -> NonPublicAddress? {
        func starts(with prefix: [UInt8], bits: Int) -> Bool {
            for bit in 0..<bits {
                let mask = UInt8(0x80) >> UInt8(bit % 8)
                if bytes[bit / 8] & mask != prefix[bit / 8] & mask { return false }
            }
            return true
        }
        func embeddedV4(at offset: Int) -> UInt32 {
            bytes[offset..<offset + 4].reduce(0) { $0 << 8 | UInt32($1) }
        }
        /// A 16-byte prefix pattern: `head` followed by zeros.
        func padded(_ head: [UInt8]) -> [UInt8] { head + [UInt8](repeating: 0, count: 16 - head.count) }
        let zeros = padded([])
        if bytes == zeros { return .unspecified }
        if bytes == Array(zeros.dropLast()) + [1] { return .loopback }
        if starts(with: padded([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff]), bits: 96) { return .ipv4Mapped }
        if starts(with: zeros, bits: 96) { return .ipv4Compatible }
        // NAT64 (64:ff9b::/96) reaches the IPv4 address in its last 4 bytes.
        if starts(with: padded([0, 0x64, 0xff, 0x9b]), bits: 96) {
            return classify(v4: embeddedV4(at: 12))
        }
        if starts(with: padded([0, 0x64, 0xff, 0x9b, 0, 1]), bits: 48) { return .nat64Local }
        // 6to4 (2002::/16) reaches the IPv4 address in bytes 2...5.
        if starts(with: padded([0x20, 0x02]), bits: 16) { return classify(v4: embeddedV4(at: 2)) }
        if starts(with: padded([0xfc]), bits: 7) { return .privateNetwork }  // unique local fc00::/7
        if starts(with: padded([0xfe, 0x80]), bits: 10) { return .linkLocal }
        if starts(with: padded([0xfe, 0xc0]), bits: 10) { return .privateNetwork }  // former site-local
        if starts(with: padded([0xff]), bits: 8) { return .multicast }
        if starts(with: padded([0x20, 0x01, 0x0d, 0xb8]), bits: 32) { return .documentation }
        if starts(with: padded([0x3f, 0xff]), bits: 20) { return .documentation }
        if starts(with: padded([0x20, 0x01]), bits: 23) { return .reserved }  // IETF special purpose, Teredo
        // Only 2000::/3 is allocated as global unicast; everything else is reserved.
        if !starts(with: padded([0x20]), bits: 3) { return .reserved }
        return nil
    }
}
