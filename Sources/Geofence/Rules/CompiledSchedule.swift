import Foundation
import Shared

/// A zone's weekly active schedule, ready to answer "active at this instant?".
///
/// The local wall-clock time is the fix's instant plus the zone time zone's UTC
/// offset *at that instant* (from the IANA database), so windows follow the clock
/// on the wall across DST changes: on a spring-forward night the skipped hour simply
/// never occurs, and on a fall-back night the repeated hour is inside a window
/// twice, exactly as a person reading the clock would expect.
struct CompiledSchedule: Sendable {
    struct Window: Sendable {
        /// Bit d set: the window starts on weekday d (0 = Monday).
        var days: UInt8
        /// Seconds after local midnight.
        var start: Int
        var end: Int
    }

    var timeZone: TimeZone
    var windows: [Window]

    init?(_ schedule: ActiveSchedule) {
        guard let zone = TimeZone(identifier: schedule.timeZone) else { return nil }
        var windows: [Window] = []
        for window in schedule.windows {
            guard let start = Self.secondsOfDay(window.start), let end = Self.secondsOfDay(window.end) else { return nil }
            var days: UInt8 = 0
            for day in window.days { days |= 1 << Self.index(of: day) }
            windows.append(Window(days: days, start: start, end: end))
        }
        timeZone = zone
        self.windows = windows
    }

    static func index(of day: Weekday) -> Int {
        Weekday.allCases.firstIndex(of: day) ?? 0
    }

    /// `HH:MM` with `24:00` allowed as the end of a day.
    static func secondsOfDay(_ text: String) -> Int? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].count == 2, parts[1].count == 2, let hours = Int(parts[0]),
            let minutes = Int(parts[1]), (0...24).contains(hours), (0..<60).contains(minutes),
            hours < 24 || minutes == 0
        else { return nil }
        return hours * 3600 + minutes * 60
    }

    func isActive(at time: Double) -> Bool {
        let offset = timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: time))
        let local = Int((time + Double(offset)).rounded(.down))
        let days = local >= 0 ? local / 86_400 : (local - 86_399) / 86_400
        let second = local - days * 86_400
        // 1970-01-01 was a Thursday (3 when Monday is 0).
        let weekday = ((days + 3) % 7 + 7) % 7
        let yesterday = (weekday + 6) % 7
        for window in windows {
            let today = window.days & (1 << weekday) != 0
            if window.start < window.end {
                if today, second >= window.start, second < window.end { return true }
            } else {
                // Runs past midnight (or all day when start == end).
                if today, second >= window.start { return true }
                if window.days & (1 << yesterday) != 0, second < window.end { return true }
            }
        }
        return false
    }
}
