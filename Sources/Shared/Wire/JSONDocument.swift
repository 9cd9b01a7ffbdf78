/// Hands a JSON document to a `JSONScanner` as UTF-8, the way `JSONSerialization`
/// decides its encoding: a UTF-8, UTF-16 or UTF-32 byte-order mark is skipped, and
/// without one, NUL bytes among the first four mean UTF-16 or UTF-32. Those are
/// transcoded first; UTF-8, the only encoding clients send, is read in place.
enum JSONDocument {
    private enum Encoding {
        case utf8, utf16(bigEndian: Bool), utf32(bigEndian: Bool)
    }

    /// `body`'s result, or nil when the document is not JSON.
    static func read<Result>(
        _ bytes: UnsafeBufferPointer<UInt8>, _ body: (inout JSONScanner) throws(JSONSyntaxError) -> Result
    ) -> Result? {
        let (encoding, skipped) = encoding(of: bytes)
        let document = UnsafeBufferPointer(rebasing: bytes[skipped...])
        guard case .utf8 = encoding else {
            guard let utf8 = transcode(document, from: encoding) else { return nil }
            return utf8.withUnsafeBufferPointer { utf8 in
                var scanner = JSONScanner(utf8)
                return try? body(&scanner)
            }
        }
        var scanner = JSONScanner(document)
        return try? body(&scanner)
    }

    private static func encoding(of bytes: UnsafeBufferPointer<UInt8>) -> (Encoding, skipped: Int) {
        let count = bytes.count
        func byte(_ index: Int) -> UInt8 { bytes[index] }
        if count >= 2 {
            switch (byte(0), byte(1)) {
            case (0xEF, 0xBB) where count >= 3 && byte(2) == 0xBF: return (.utf8, 3)
            case (0x00, 0x00) where count >= 4 && byte(2) == 0xFE && byte(3) == 0xFF: return (.utf32(bigEndian: true), 4)
            case (0xFF, 0xFE):
                if count >= 4 && byte(2) == 0 && byte(3) == 0 { return (.utf32(bigEndian: false), 4) }
                return (.utf16(bigEndian: false), 2)
            case (0xFE, 0xFF): return (.utf16(bigEndian: true), 2)
            default: break
            }
        }
        if count >= 4 {
            switch (byte(0), byte(1), byte(2), byte(3)) {
            case (0, 0, 0, _): return (.utf32(bigEndian: true), 0)
            case (_, 0, 0, 0): return (.utf32(bigEndian: false), 0)
            case (0, _, 0, _): return (.utf16(bigEndian: true), 0)
            case (_, 0, _, 0): return (.utf16(bigEndian: false), 0)
            default: break
            }
        } else if count >= 2 {
            if byte(0) == 0 { return (.utf16(bigEndian: true), 0) }
            if byte(1) == 0 { return (.utf16(bigEndian: false), 0) }
        }
        return (.utf8, 0)
    }

    /// UTF-8 of a UTF-16 or UTF-32 document; nil when it holds an unpaired surrogate or
    /// a value beyond U+10FFFF. Bytes short of a whole code unit at the end are dropped.
    private static func transcode(_ bytes: UnsafeBufferPointer<UInt8>, from encoding: Encoding) -> [UInt8]? {
        var utf8: [UInt8] = []
        utf8.reserveCapacity(bytes.count)
        func append(_ scalar: Unicode.Scalar) { utf8.append(contentsOf: UTF8.encode(scalar)!) }
        switch encoding {
        case .utf8:
            return Array(bytes)
        case .utf16(let bigEndian):
            var index = 0
            func unit() -> UInt32 {
                defer { index += 2 }
                let (first, second) = (UInt32(bytes[index]), UInt32(bytes[index + 1]))
                return bigEndian ? first << 8 | second : second << 8 | first
            }
            while index + 2 <= bytes.count {
                let high = unit()
                if high & 0xFC00 == 0xD800 {
                    guard index + 2 <= bytes.count else { return nil }
                    let low = unit()
                    guard low & 0xFC00 == 0xDC00 else { return nil }
                    append(Unicode.Scalar((high - 0xD800) << 10 + (low - 0xDC00) + 0x10000)!)
                } else {
                    guard let scalar = Unicode.Scalar(high) else { return nil }
                    append(scalar)
                }
            }
        case .utf32(let bigEndian):
            var index = 0
            while index + 4 <= bytes.count {
                let word = (0..<4).reduce(UInt32(0)) { value, offset in
                    value | UInt32(bytes[index + offset]) << (bigEndian ? 24 - 8 * offset : 8 * offset)
                }
                index += 4
                guard let scalar = Unicode.Scalar(word) else { return nil }
                append(scalar)
            }
        }
        return utf8
    }
}
