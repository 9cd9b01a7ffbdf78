import Foundation
import Shared

/// SplitMix64: a seed names the whole sequence, so a failing seed reproduces its sample.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE5_E9B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Events and fixes with every field the encoder treats differently: optionals present or
/// absent, doubles of every magnitude and form, strings with what JSON escapes and what it
/// does not, keys that sort differently by bytes, by characters and by locale.
struct WireJSONSamples {
    var random: SeededGenerator

    init(seed: UInt64) { random = SeededGenerator(seed: seed) }

    mutating func chance(_ probability: Double = 0.5) -> Bool { Double.random(in: 0..<1, using: &random) < probability }

    mutating func pick<T>(_ choices: [T]) -> T { choices.randomElement(using: &random)! }

    mutating func maybe<T>(_ make: (inout Self) -> T) -> T? { chance() ? make(&self) : nil }

    mutating func many<T>(_ range: ClosedRange<Int>, _ make: (inout Self) -> T) -> [T] {
        (0..<Int.random(in: range, using: &random)).map { _ in make(&self) }
    }

    /// Pieces that each exercise one rule of the encoder's string and key handling.
    static let stringPieces: [String] = [
        "a", "b", "z", "A", "B", "Z", "0", "1", "9", "10", "_", "-", " ", "~", "id", "Id", "ID", "name", "a b",
        "\"", "\\", "/", "//", "\\/", "\u{0}", "\u{1}", "\u{7}", "\u{8}", "\u{9}", "\u{A}", "\u{B}", "\u{C}", "\u{D}",
        "\u{1B}", "\u{1F}", "\u{7F}", "\u{80}", "\u{A0}", "é", "e\u{301}", "É", "ß", "ñ", "Å", "ø", "中文", "日本",
        "\u{2028}", "\u{2029}", "\u{FEFF}", "\u{FFFD}", "\u{FFFF}", "😀", "👍🏽", "🇦🇺", "👨‍👩‍👧", "𝔸", "\u{10FFFF}",
        "http://example.com/a?b=c&d=e", "</script>", "'", "{}", "[]", ":", ",",
    ]

    mutating func string() -> String {
        many(0...5) { $0.pick(Self.stringPieces) }.joined()
    }

    mutating func identifier() -> String {
        chance(0.8) ? "\(pick(["dev", "p", "zone", "fence", "evt"]))-\(Int.random(in: 0..<100_000, using: &random))" : string()
    }

    mutating func customData() -> [String: String] {
        var data: [String: String] = [:]
        for _ in 0..<Int.random(in: 0...8, using: &random) {
            data[string()] = string()
        }
        return data
    }

    mutating func int() -> Int {
        switch Int.random(in: 0..<6, using: &random) {
        case 0: pick([0, 1, -1, 9, 10, 99, 100, Int.max, Int.min, Int.max - 1, Int.min + 1, 65_535])
        case 1: Int.random(in: -100...100, using: &random)
        case 2: Int.random(in: 0...65_535, using: &random)
        default: Int.random(in: Int.min...Int.max, using: &random)
        }
    }

    /// Finite doubles across every form `description` takes.
    mutating func double() -> Double {
        let magnitude: Double
        switch Int.random(in: 0..<12, using: &random) {
        case 0:
            magnitude = pick([
                0, 1, 8, 10, 100, 1e-4, 1e-5, 0.1, 0.2, 0.3, 1.0 / 3, 2.0 / 3, 1e15, 1e16, 1e17, 1e21, 1e22, 1e23,
                9_007_199_254_740_991, 9_007_199_254_740_992, 9_007_199_254_740_994, 4_503_599_627_370_496.5,
                .leastNonzeroMagnitude, .leastNormalMagnitude, .greatestFiniteMagnitude, .ulpOfOne, .pi,
            ])
        case 1: magnitude = Double(Int.random(in: 0...1_000_000, using: &random))
        case 2: magnitude = Double(Int.random(in: 0...(1 << 60), using: &random))
        case 3: magnitude = Double.random(in: 0..<1, using: &random) * pow(10, Double(Int.random(in: -330...(-4), using: &random)))
        case 4: magnitude = Double.random(in: 1..<10, using: &random) * pow(10, Double(Int.random(in: 14...307, using: &random)))
        case 5: magnitude = Double.random(in: 0..<180, using: &random)
        case 6: magnitude = (Double.random(in: 0..<180, using: &random) * 1e6).rounded() / 1e6
        case 7: magnitude = Double(Int.random(in: 0...1000, using: &random)) / pick([2, 4, 8, 10, 100, 1000])
        case 8: magnitude = Double(sign: .plus, exponent: Int.random(in: -1074...1023, using: &random), significand: 1)
        default:
            var bits = Double(bitPattern: UInt64.random(in: 0...UInt64.max, using: &random) & ~(1 << 63))
            if !bits.isFinite { bits = 0 }
            magnitude = bits
        }
        return chance() ? -magnitude : magnitude
    }

    mutating func date() -> Date {
        switch Int.random(in: 0..<8, using: &random) {
        case 0:
            Date(
                timeIntervalSince1970: pick([
                    0, -0.001, -1, 946_684_800, 253_402_300_799.999, 253_402_300_800, -62_167_219_200, -62_167_219_200.001,
                ]))
        case 1: Date(timeIntervalSince1970: Double.random(in: -1e11...1e12, using: &random))
        case 2: Date(timeIntervalSince1970: Double(Int.random(in: 946_684_800_000...4_102_444_800_000, using: &random)) / 1000)
        default: Date(timeIntervalSince1970: Double.random(in: 946_684_800...4_102_444_800, using: &random))
        }
    }

    mutating func position() -> Position { Position(lon: double(), lat: double()) }

    mutating func ring() -> [Position] { many(0...6) { $0.position() } }

    mutating func geometry() -> GeoJSONGeometry {
        switch Int.random(in: 0..<4, using: &random) {
        case 0: .point(position())
        case 1: .lineString(ring())
        case 2: .polygon(many(0...3) { $0.ring() })
        default: .multiPolygon(many(0...3) { samples in samples.many(0...3) { $0.ring() } })
        }
    }

    mutating func fence() -> FenceSummary {
        let omitted = chance(0.3)
        return FenceSummary(
            id: identifier(), name: string(), description: string(), geometry: omitted ? nil : geometry(),
            geometryOmitted: omitted ? pick([true, nil]) : pick([false, nil]), radius: maybe { $0.double() })
    }

    mutating func beacon() -> BeaconSummary {
        BeaconSummary(
            id: identifier(), name: string(), uuid: maybe { $0.string() }, major: maybe { $0.int() },
            minor: maybe { $0.int() }, eddystoneId: maybe { $0.string() })
    }

    mutating func event() -> CheckEvent {
        let type: EventType = pick([.checkin, .checkout])
        return CheckEvent(
            eventId: identifier(), type: type, projectId: identifier(), deviceId: identifier(), checkInId: identifier(),
            zone: ZoneSummary(id: identifier(), name: string(), description: string(), customData: customData()),
            fence: maybe { $0.fence() }, beacon: maybe { $0.beacon() },
            location: EventLocation(
                timestamp: date(), lat: double(), lon: double(), accuracy: maybe { $0.double() },
                speed: maybe { $0.double() }, bearing: maybe { $0.double() }),
            willCheckOut: chance(), mode: pick(FixMode.allCases),
            crossing: maybe { GeolineCrossing(lat: $0.double(), lon: $0.double(), direction: $0.pick([.leftToRight, .rightToLeft])) },
            checkInTime: maybe { $0.date() }, checkOutTime: maybe { $0.date() }, dwellSeconds: maybe { $0.double() },
            reason: maybe { $0.pick([.exit, .timeout, .beaconLost]) }, sequence: int())
    }

    mutating func fix() -> Fix {
        Fix(
            projectId: identifier(), deviceId: identifier(), timestamp: date(), lat: double(), lon: double(),
            accuracy: maybe { $0.double() }, speed: maybe { $0.double() }, bearing: maybe { $0.double() },
            altitude: maybe { $0.double() }, source: maybe { $0.pick(FixSource.allCases) }, mode: pick(FixMode.allCases),
            beacons: chance()
                ? []
                : many(1...3) { samples in
                    BeaconSighting(
                        uuid: samples.maybe { $0.string() }, major: samples.maybe { $0.int() }, minor: samples.maybe { $0.int() },
                        eddystoneId: samples.maybe { $0.string() }, rssi: samples.int())
                },
            fixId: maybe { $0.identifier() })
    }

    /// A check-in as the evaluator typically writes one: a small polygon fence, a little
    /// custom data, a fix with an accuracy.
    static func typicalEvent(_ index: Int) -> CheckEvent {
        let ring = (0..<8).map { corner in
            Position(lon: 144.96 + 0.001 * cos(Double(corner)), lat: -37.81 + 0.001 * sin(Double(corner)))
        }
        return CheckEvent(
            eventId: "evt-\(index)-3f9a2c", type: .checkin, projectId: "project-7", deviceId: "device-\(index % 1000)",
            checkInId: "checkin-\(index)",
            zone: ZoneSummary(
                id: "zone-42", name: "Flinders Street Station", description: "Main entrance",
                customData: ["storeId": "1042", "region": "VIC"]),
            fence: FenceSummary(id: "fence-1", name: "Entrance", description: "", geometry: .polygon([ring + [ring[0]]])),
            location: EventLocation(
                timestamp: Date(timeIntervalSince1970: 1_795_341_900.125 + Double(index)), lat: -37.810_123_4,
                lon: 144.960_567_8, accuracy: 12, speed: 1.4),
            willCheckOut: true, mode: .normal, sequence: index)
    }
}
