import Foundation

/// Deterministic event ids: a 128-bit FNV-1a hash of what identifies the decision,
/// written as a UUID. The same input gives the same id in every process and on every
/// machine (Swift's `Hasher` is seeded per process and cannot be used), so a
/// redelivered or replayed decision is recognised downstream.
struct EventIdentity {
    private var hash: UInt128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d
    private static let prime: UInt128 = 0x0000_0000_0100_0000_0000_0000_0000_013B
    private var parts = 0

    /// Adds one field; fields are separated so that ("ab", "c") and ("a", "bc") differ.
    mutating func add(_ part: String) {
        if parts > 0 {
            hash ^= 0x1F
            hash = hash &* Self.prime
        }
        parts += 1
        var part = part
        part.withUTF8 { bytes in
            for byte in bytes {
                hash ^= UInt128(byte)
                hash = hash &* Self.prime
            }
        }
    }

    /// A time as an exact integer of microseconds, so the text never depends on formatting.
    mutating func add(time: Double) {
        add(String(Int64((time * 1_000_000).rounded())))
    }

    /// The hash as a version-8 (custom) UUID of the RFC 9562 variant.
    var uuid: String {
        var value = hash
        value = (value & ~(UInt128(0xF) << 76)) | (UInt128(8) << 76)
        value = (value & ~(UInt128(0x3) << 62)) | (UInt128(0x2) << 62)
        let high = UInt64(truncatingIfNeeded: value >> 64)
        let low = UInt64(truncatingIfNeeded: value)
        return String(unsafeUninitializedCapacity: 36) { buffer in
            let digits: StaticString = "0123456789abcdef"
            var out = 0
            for nibble in 0..<32 {
                if nibble == 8 || nibble == 12 || nibble == 16 || nibble == 20 {
                    buffer[out] = UInt8(ascii: "-")
                    out += 1
                }
                let half = nibble < 16 ? high : low
                let digit = Int(truncatingIfNeeded: (half &>> UInt64(60 - (nibble & 15) * 4)) & 0xF)
                buffer[out] = digits.utf8Start[digit]
                out += 1
            }
            return out
        }
    }

    static func id(_ parts: [String]) -> String {
        var identity = EventIdentity()
        for part in parts { identity.add(part) }
        return identity.uuid
    }
}
