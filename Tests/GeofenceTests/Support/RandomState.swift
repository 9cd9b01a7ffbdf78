import Foundation

@testable import Geofence

/// Device states built field by field, with what the engine seldom or never writes:
/// every optional present or absent, signed zeros, extreme and (when asked for)
/// non-finite doubles, long and non-ASCII ids, counters at the ends of their range.
enum RandomState {
    static func state(rng: inout SplitMix, nonFinite: Bool = false, maximumZones: Int = 6) -> DeviceState {
        var state = DeviceState()
        if Bool.random(using: &rng) { state.lastTime = double(&rng, nonFinite: nonFinite) }
        if Bool.random(using: &rng) {
            state.lastFix = FixMemory(
                time: double(&rng, nonFinite: nonFinite), lat: double(&rng, nonFinite: nonFinite),
                lon: double(&rng, nonFinite: nonFinite), accuracy: optionalDouble(&rng, nonFinite: nonFinite),
                speed: optionalDouble(&rng, nonFinite: nonFinite), bearing: optionalDouble(&rng, nonFinite: nonFinite))
        }
        if Bool.random(using: &rng) {
            state.track = TrackPoint(
                time: double(&rng, nonFinite: nonFinite), lat: double(&rng, nonFinite: nonFinite),
                lon: double(&rng, nonFinite: nonFinite))
        }
        let ids = Int.random(in: 0...DeviceState.rememberedFixIds, using: &rng)
        state.recentFixIds = (0..<ids).map { _ in
            // Digests are 53 bits; the codec must not care.
            Bool.random(using: &rng) ? rng.next() & ((1 << 53) - 1) : rng.next()
        }
        state.recentCursor = Int.random(in: 0..<DeviceState.rememberedFixIds, using: &rng)
        state.lastSequence =
            switch Int.random(in: 0..<4, using: &rng) {
            case 0: 0
            case 1: Int.random(in: 1...1000, using: &rng)
            case 2: [Int.max, Int.min, -1].randomElement(using: &rng)!
            default: Int(truncatingIfNeeded: rng.next())
            }
        state.zones = (0..<Int.random(in: 0...maximumZones, using: &rng)).map { _ in
            var zone = ZoneMemory(zoneId: text(&rng))
            zone.fenceInside = Bool.random(using: &rng)
            zone.beaconSeen = optionalDouble(&rng, nonFinite: nonFinite)
            if Bool.random(using: &rng) {
                zone.open = OpenCheckIn(
                    checkInId: text(&rng), time: double(&rng, nonFinite: nonFinite),
                    fenceId: Bool.random(using: &rng) ? text(&rng) : nil,
                    beaconId: Bool.random(using: &rng) ? text(&rng) : nil)
            }
            zone.lastCheckIn = optionalDouble(&rng, nonFinite: nonFinite)
            zone.retriggerFrom = optionalDouble(&rng, nonFinite: nonFinite)
            return zone
        }
        return state
    }

    static func optionalDouble(_ rng: inout SplitMix, nonFinite: Bool) -> Double? {
        Bool.random(using: &rng) ? double(&rng, nonFinite: nonFinite) : nil
    }

    static func double(_ rng: inout SplitMix, nonFinite: Bool) -> Double {
        var special: [Double] = [
            0, -0.0, 1_780_308_000.123456, .leastNonzeroMagnitude, -.leastNormalMagnitude, .greatestFiniteMagnitude,
            -.greatestFiniteMagnitude, .ulpOfOne, 90, -180,
        ]
        if nonFinite { special += [.infinity, -.infinity, .nan, -.nan, .signalingNaN, Double(bitPattern: 0x7FF0_0000_DEAD_BEEF)] }
        switch Int.random(in: 0..<4, using: &rng) {
        case 0: return special.randomElement(using: &rng)!
        case 1: return Double.random(in: -180...180, using: &rng)
        case 2: return Double.random(in: 1e9...2e9, using: &rng)
        default:
            // Any finite bit pattern: every exponent and sign.
            let value = Double(bitPattern: rng.next())
            return value.isFinite || nonFinite ? value : 1
        }
    }

    /// Ids as clients send them: ASCII mostly, but also accents, CJK, emoji with
    /// modifiers, combining marks, control characters and lengths past one varint byte.
    static func text(_ rng: inout SplitMix) -> String {
        let pieces = ["z", "fence-", "0", "é", "e\u{301}", "東京", "👩🏽‍🚀", "🇫🇷", "\u{0}", "\u{7F}", "\"", "\\", "{", " ", "\u{10FFFF}"]
        let length = Int.random(in: 0..<10, using: &rng) == 0 ? Int.random(in: 60...400, using: &rng) : Int.random(in: 0...12, using: &rng)
        return (0..<length).map { _ in pieces.randomElement(using: &rng)! }.joined()
    }

    /// Whether the state holds a double JSON cannot write (JSONEncoder refuses them).
    static func hasNonFinite(_ state: DeviceState) -> Bool {
        var doubles = [state.lastTime, state.lastFix?.time, state.lastFix?.lat, state.lastFix?.lon]
        doubles += [state.lastFix?.accuracy, state.lastFix?.speed, state.lastFix?.bearing]
        doubles += [state.track?.time, state.track?.lat, state.track?.lon]
        for zone in state.zones { doubles += [zone.beaconSeen, zone.open?.time, zone.lastCheckIn, zone.retriggerFrom] }
        return doubles.contains { $0.map { !$0.isFinite } ?? false }
    }
}
