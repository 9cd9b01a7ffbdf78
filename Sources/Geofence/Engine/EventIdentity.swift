import Foundation

/// Deterministic event ids: a 128-bit FNV-1a hash of what identifies the decision,
/// written as a UUID. The same input gives the same id in every process and on every
/// machine (Swift's `Hasher` is seeded per process and cannot be used), so a
/// redelivered or replayed decision is recognised downstream.
enum EventIdentity {
    static func id(_ parts: [String]) -> String {
        var hash: UInt128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d
        let prime: UInt128 = 0x0000_0000_0100_0000_0000_0000_0000_013B
        for (index, part) in parts.enumerated() {
            if index > 0 {
                hash ^= 0x1F
                hash = hash &* prime
            }
            for byte in part.utf8 {
                hash ^= UInt128(byte)
                hash = hash &* prime
            }
        }
        // Mark it as a version-8 (custom) UUID of the RFC 9562 variant.
        hash = (hash & ~(UInt128(0xF) << 76)) | (UInt128(8) << 76)
        hash = (hash & ~(UInt128(0x3) << 62)) | (UInt128(0x2) << 62)
        let hex = String(hash, radix: 16)
        let padded = String(repeating: "0", count: 32 - hex.count) + hex
        let chars = Array(padded)
        return String(chars[0..<8]) + "-" + String(chars[8..<12]) + "-" + String(chars[12..<16]) + "-"
            + String(chars[16..<20]) + "-" + String(chars[20..<32])
    }

    /// A time as an exact integer of microseconds, so the text never depends on formatting.
    static func micros(_ time: Double) -> String {
        String(Int64((time * 1_000_000).rounded()))
    }
}
