/// The `Double` that `JSONSerialization` (swift-corelibs-foundation) makes of a JSON
/// number, bit for bit, so that a fix read from bytes has the very coordinates it had
/// when `JSONSerialization` read it.
///
/// That is not always the correctly rounded value. `JSONSerialization` reads a number
/// as an integer when it has no `.` and no lowercase `e` (so `-0` becomes +0.0); as a
/// `Decimal` when the text before any `e` is longer than 17 characters and the
/// exponent after it is within ±128 (so `-37.81362847298173`, 18 characters, is read
/// as a `Decimal`, whose conversion to `Double` divides by ten once per decimal place
/// and may land an ulp or more away); and as a correctly rounded `Double` otherwise.
/// A number it cannot hold (`1e400`) makes the whole document invalid.
enum JSONNumber {
    /// `token` is one complete JSON number (grammar already checked). Nil when
    /// `JSONSerialization` refuses it.
    static func value(_ token: UnsafeBufferPointer<UInt8>) -> Double? {
        var lowercaseE: Int?
        var hasFraction = false
        var hasUppercaseE = false
        for index in token.indices {
            switch token[index] {
            case UInt8(ascii: "."): hasFraction = true
            case UInt8(ascii: "e"): if lowercaseE == nil { lowercaseE = index }
            case UInt8(ascii: "E"): hasUppercaseE = true
            default: break
            }
        }
        let negative = token[0] == UInt8(ascii: "-")
        // Characters before the first lowercase `e`, sign and point included.
        let digitCount = lowercaseE ?? token.count

        if !hasFraction && lowercaseE == nil && !hasUppercaseE {
            // Int64 for negatives of up to 19 characters, UInt64 for up to 20.
            if negative ? digitCount <= 19 : digitCount <= 20,
                let magnitude = integerMagnitude(token, from: negative ? 1 : 0)
            {
                return negative && magnitude != 0 ? -Double(magnitude) : Double(magnitude)
            }
        }

        var exponent = 0
        if let lowercaseE {
            exponent = integer(token, from: lowercaseE + 1) ?? 0
        }
        if digitCount > 17, exponent >= -128, exponent <= 127, let decimal = decimalValue(token) {
            return decimal
        }
        let double = correctlyRounded(token)
        return double.isFinite ? double : nil
    }

    /// The digits from `start` to the end as an unsigned 64-bit integer, nil when they overflow it.
    private static func integerMagnitude(_ token: UnsafeBufferPointer<UInt8>, from start: Int) -> UInt64? {
        var value: UInt64 = 0
        for index in start..<token.count {
            let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(UInt64(token[index] &- 48))
            if overflow1 || overflow2 { return nil }
            value = sum
        }
        return value
    }

    /// `Int(text)` of an exponent's text (`+5`, `-05`, `12`): nil when it overflows `Int`.
    private static func integer(_ token: UnsafeBufferPointer<UInt8>, from start: Int) -> Int? {
        var index = start
        var negative = false
        if token[index] == UInt8(ascii: "+") || token[index] == UInt8(ascii: "-") {
            negative = token[index] == UInt8(ascii: "-")
            index += 1
        }
        var value = 0
        while index < token.count {
            let digit = Int(token[index] &- 48)
            let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (next, overflow2) = negative ? times10.subtractingReportingOverflow(digit) : times10.addingReportingOverflow(digit)
            if overflow1 || overflow2 { return nil }
            value = next
            index += 1
        }
        return value
    }

    /// `NSDecimalNumber(decimal: Decimal(string: text)!).doubleValue`, or nil where
    /// `Decimal(string:)` gives up (an exponent outside -128...127): a 128-bit
    /// significand that drops the digits that do not fit, trailing zeros moved into
    /// the exponent, then converted one 16-bit word and one power of ten at a time.
    private static func decimalValue(_ token: UnsafeBufferPointer<UInt8>) -> Double? {
        var significand = DecimalSignificand()
        var exponent = 0
        var tooBigToFit = false
        var index = 0
        let negative = token[0] == UInt8(ascii: "-")
        if negative { index = 1 }

        while index < token.count, isDigit(token[index]) {
            defer { index += 1 }
            if !tooBigToFit, significand.append(token[index] &- 48) { continue }
            tooBigToFit = true
            if exponent == Int(Int8.max) { return nil }
            exponent += 1
        }
        if index < token.count, token[index] == UInt8(ascii: ".") {
            index += 1
            while index < token.count, isDigit(token[index]) {
                defer { index += 1 }
                if tooBigToFit { continue }
                guard significand.append(token[index] &- 48) else {
                    tooBigToFit = true
                    continue
                }
                if exponent == Int(Int8.min) { return nil }
                exponent -= 1
            }
        }
        if index < token.count, token[index] == UInt8(ascii: "e") || token[index] == UInt8(ascii: "E") {
            index += 1
            var exponentIsNegative = false
            if token[index] == UInt8(ascii: "-") || token[index] == UInt8(ascii: "+") {
                exponentIsNegative = token[index] == UInt8(ascii: "-")
                index += 1
            }
            var written = 0
            while index < token.count {
                written = 10 * written + Int(token[index] &- 48)
                if written > 2 * Int(Int8.max) { return nil }
                index += 1
            }
            exponent += exponentIsNegative ? -written : written
            if exponent > Int(Int8.max) || exponent < Int(Int8.min) { return nil }
        }

        // Zero, "-0.000…" included, is +0.
        guard var double = significand.doubleMovingTrailingZeros(into: &exponent) else { return 0 }
        if exponent < 0 {
            for _ in exponent..<0 { double /= 10 }
        } else {
            for _ in 0..<exponent { double *= 10 }
        }
        return negative ? -double : double
    }

    /// `Decimal`'s 128-bit significand, kept in 64 bits while it fits there (as it
    /// does for up to 19 digits), where arithmetic is cheap.
    private struct DecimalSignificand {
        private var narrow: UInt64 = 0
        private var wide: UInt128?

        /// Appends a decimal digit; false, leaving the value alone, when it would
        /// overflow 128 bits.
        mutating func append(_ digit: UInt8) -> Bool {
            if wide == nil {
                if narrow <= (UInt64.max - 9) / 10 {
                    narrow = narrow &* 10 &+ UInt64(digit)
                    return true
                }
                wide = UInt128(narrow)
            }
            let (times10, overflow1) = wide!.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(UInt128(digit))
            if overflow1 || overflow2 { return false }
            wide = sum
            return true
        }

        /// Moves trailing zeros into `exponent` as far as it reaches 127, then converts
        /// to `Double` a 16-bit word at a time from the top, as `Decimal.doubleValue`
        /// does; nil for zero.
        mutating func doubleMovingTrailingZeros(into exponent: inout Int) -> Double? {
            guard let wide else {
                if narrow == 0 { return nil }
                while exponent < Int(Int8.max), narrow % 10 == 0 {
                    narrow /= 10
                    exponent += 1
                }
                // Below 2^64 the word-by-word sum is exact until the last word: one
                // rounding, that of `Double(UInt64)`.
                return Double(narrow)
            }
            var value = wide
            while exponent < Int(Int8.max) {
                let (quotient, remainder) = value.quotientAndRemainder(dividingBy: 10)
                if remainder != 0 { break }
                value = quotient
                exponent += 1
            }
            var double = 0.0
            for word in stride(from: 112, through: 0, by: -16) {
                double = double * 65536 + Double(UInt16(truncatingIfNeeded: value >> UInt128(word)))
            }
            return double
        }
    }

    private static let exactPowersOfTen: [Double] = (0...22).map { power in
        var value = 1.0
        for _ in 0..<power { value *= 10 }
        return value
    }

    /// The correctly rounded `Double` of the token, infinite when it is too large.
    private static func correctlyRounded(_ token: UnsafeBufferPointer<UInt8>) -> Double {
        // Up to 19 significant digits and a power of ten a double holds exactly: one
        // exact operand, one rounding (Clinger's fast path).
        var significand: UInt64 = 0
        var digits = 0
        var decimalExponent = 0
        var index = token[0] == UInt8(ascii: "-") ? 1 : 0
        var inFraction = false
        while index < token.count {
            let byte = token[index]
            if byte == UInt8(ascii: ".") {
                inFraction = true
            } else if isDigit(byte) {
                if significand != 0 || byte != UInt8(ascii: "0") { digits += 1 }
                significand = significand &* 10 &+ UInt64(byte &- 48)
                if inFraction { decimalExponent -= 1 }
            } else {
                break
            }
            index += 1
        }
        if index < token.count, let written = integer(token, from: index + 1) {
            decimalExponent += written
        } else if index < token.count {
            digits = Int.max
        }
        if digits <= 19, significand <= 1 << 53, abs(decimalExponent) <= 22 {
            var value = Double(significand)
            value = decimalExponent < 0 ? value / exactPowersOfTen[-decimalExponent] : value * exactPowersOfTen[decimalExponent]
            return token[0] == UInt8(ascii: "-") ? -value : value
        }
        return Double(String(decoding: token, as: UTF8.self)) ?? .nan
    }

    @inline(__always)
    static func isDigit(_ byte: UInt8) -> Bool { byte &- 48 < 10 }
}
