import Foundation

/// SplitMix64: a generator whose whole state is its seed, so that a failing case of a
/// property test is reproduced by running it again with the printed seed.
struct SeededRandom: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    // Plain modulo rather than `Int.random(in:using:)`: tests run unoptimized, where the
    // generic path costs more than the decoding under test; the bias is immaterial here.

    /// True one time in `outOf`.
    mutating func oneIn(_ outOf: Int) -> Bool { next() % UInt64(outOf) == 0 }

    mutating func pick<T>(_ choices: [T]) -> T { choices[Int(next() % UInt64(choices.count))] }

    mutating func int(_ range: ClosedRange<Int>) -> Int {
        range.lowerBound + Int(truncatingIfNeeded: next() % UInt64(range.upperBound - range.lowerBound + 1))
    }

    /// The seed a property test runs with: `CHECKIN_TEST_SEED` when set, to replay a
    /// failure or explore further, otherwise `fixed`, so that every run checks the same cases.
    static func testSeed(fixed: UInt64) -> UInt64 {
        ProcessInfo.processInfo.environment["CHECKIN_TEST_SEED"].flatMap(UInt64.init) ?? fixed
    }
}
