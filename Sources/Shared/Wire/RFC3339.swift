import Foundation

/// RFC 3339 timestamps, the only time format on the wire.
///
/// Hand-written rather than a `DateFormatter` because it sits on the hot path of
/// every fix and must be `Sendable` and locale-free.
public enum RFC3339 {
    /// Parses `2026-11-22T10:00:00Z`, `2026-11-22T10:00:00.123+01:00` and the like.
    public static func parse(_ text: String) -> Date? {
        var text = text
        return text.withUTF8 { parse(utf8: $0) }
    }

    /// The same from UTF-8 bytes, such as a JSON string's, without making a `String`.
    public static func parse(utf8: UnsafeBufferPointer<UInt8>) -> Date? {
        guard utf8.count >= 20 else { return nil }
        func digits(_ start: Int, _ count: Int) -> Int? {
            guard start + count <= utf8.count else { return nil }
            var value = 0
            for index in start..<(start + count) {
                let byte = utf8[index]
                guard byte >= 48, byte <= 57 else { return nil }
                value = value * 10 + Int(byte - 48)
            }
            return value
        }
        guard let year = digits(0, 4), utf8[4] == UInt8(ascii: "-"),
            let month = digits(5, 2), utf8[7] == UInt8(ascii: "-"),
            let day = digits(8, 2),
            [UInt8(ascii: "T"), UInt8(ascii: "t"), UInt8(ascii: " ")].contains(utf8[10]),
            let hour = digits(11, 2), utf8[13] == UInt8(ascii: ":"),
            let minute = digits(14, 2), utf8[16] == UInt8(ascii: ":"),
            let second = digits(17, 2)
        else { return nil }
        guard (1...12).contains(month), (1...daysInMonth(year: year, month: month)).contains(day),
            hour < 24, minute < 60, second < 61
        else { return nil }
        var index = 19
        var fraction = 0.0
        if index < utf8.count, utf8[index] == UInt8(ascii: ".") {
            index += 1
            var scale = 0.1
            let start = index
            while index < utf8.count, utf8[index] >= 48, utf8[index] <= 57 {
                fraction += Double(utf8[index] - 48) * scale
                scale /= 10
                index += 1
            }
            guard index > start else { return nil }
        }
        guard index < utf8.count else { return nil }
        var offsetSeconds = 0
        switch utf8[index] {
        case UInt8(ascii: "Z"), UInt8(ascii: "z"):
            index += 1
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            let sign = utf8[index] == UInt8(ascii: "+") ? 1 : -1
            guard let offsetHours = digits(index + 1, 2), index + 3 < utf8.count,
                utf8[index + 3] == UInt8(ascii: ":"), let offsetMinutes = digits(index + 4, 2),
                offsetHours < 24, offsetMinutes < 60
            else { return nil }
            offsetSeconds = sign * (offsetHours * 3600 + offsetMinutes * 60)
            index += 6
        default:
            return nil
        }
        guard index == utf8.count else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        let unix = Double(days * 86_400 + hour * 3600 + minute * 60 + second - offsetSeconds) + fraction
        return Date(timeIntervalSince1970: unix)
    }

    /// Formats as UTC with millisecond precision: `2026-11-22T10:00:00.123Z`.
    public static func format(_ date: Date) -> String {
        let (year, month, day, hour, minute, second, millisecond) = fields(of: date)
        func pad(_ value: Int, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(hour, 2)):\(pad(minute, 2)):\(pad(second, 2)).\(pad(millisecond, 3))Z"
    }

    /// Appends the bytes of `format(date)` without building strings: the JSON writer puts
    /// a timestamp in every event and fix.
    public static func append(_ date: Date, to bytes: inout [UInt8]) {
        let (year, month, day, hour, minute, second, millisecond) = fields(of: date)
        guard (0...9999).contains(year) else {
            // Not four digits: whatever `format` makes of it.
            bytes.append(contentsOf: format(date).utf8)
            return
        }
        func digits(_ value: Int, _ width: Int) {
            var divisor = 1
            for _ in 1..<width { divisor *= 10 }
            while divisor > 0 {
                bytes.append(UInt8(ascii: "0") + UInt8(value / divisor % 10))
                divisor /= 10
            }
        }
        digits(year, 4)
        bytes.append(UInt8(ascii: "-"))
        digits(month, 2)
        bytes.append(UInt8(ascii: "-"))
        digits(day, 2)
        bytes.append(UInt8(ascii: "T"))
        digits(hour, 2)
        bytes.append(UInt8(ascii: ":"))
        digits(minute, 2)
        bytes.append(UInt8(ascii: ":"))
        digits(second, 2)
        bytes.append(UInt8(ascii: "."))
        digits(millisecond, 3)
        bytes.append(UInt8(ascii: "Z"))
    }

    private static func fields(
        of date: Date
    ) -> (year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int, millisecond: Int) {
        // A `Date` is binary: `.123` parsed or computed may be stored just below it
        // (`.12299999…`), and flooring that would write `.122`. A value within a microsecond
        // of a whole millisecond (or a few units of its own precision, where that is
        // coarser, in far years) is that millisecond; digits past it are still cut.
        let milliseconds = date.timeIntervalSince1970 * 1000
        let whole = milliseconds.rounded()
        let tolerance = max(0.001, milliseconds.ulp * 8)
        let totalMilliseconds = Int64(abs(milliseconds - whole) <= tolerance ? whole : milliseconds.rounded(.down))
        var days = totalMilliseconds / 86_400_000
        var milliOfDay = totalMilliseconds % 86_400_000
        if milliOfDay < 0 {
            milliOfDay += 86_400_000
            days -= 1
        }
        let (year, month, day) = civilFromDays(Int(days))
        return (
            year, month, day, Int(milliOfDay / 3_600_000), Int(milliOfDay / 60_000 % 60), Int(milliOfDay / 1000 % 60),
            Int(milliOfDay % 1000)
        )
    }

    static func daysInMonth(year: Int, month: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    static func civilFromDays(_ days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
