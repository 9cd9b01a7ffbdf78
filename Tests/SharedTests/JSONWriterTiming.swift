import Foundation
import Shared
import Testing

/// What writing an event or a fix costs against `JSONEncoder`. Meaningful in a release
/// build only: `WIRE_JSON_TIMING=1 swift test -c release --filter JSONWriterTiming`.
@Suite(.enabled(if: ProcessInfo.processInfo.environment["WIRE_JSON_TIMING"] != nil))
struct JSONWriterTiming {
    static let count = 100_000

    @Test func typicalEvents() throws {
        let events = (0..<Self.count).map(WireJSONSamples.typicalEvent)
        try compare("events", events)
    }

    @Test func typicalFixes() throws {
        let fixes = (0..<Self.count).map { index in
            Fix(
                projectId: "project-7", deviceId: "device-\(index % 1000)",
                timestamp: Date(timeIntervalSince1970: 1_795_341_900.125 + Double(index)), lat: -37.810_123_4 + 1e-6 * Double(index),
                lon: 144.960_567_8, accuracy: 12, speed: 1.4, bearing: 271.5, source: .gps, fixId: "fix-\(index)")
        }
        try compare("fixes", fixes)
    }

    func compare<Value: Encodable & WireJSONWritable>(_ name: String, _ values: [Value]) throws {
        var encodedBytes = 0
        var writtenBytes = 0
        let encoder = WireJSON.encoder()
        let encoding = try cpuSeconds {
            for value in values { encodedBytes += try encoder.encode(value).count }
        }
        let writing = try cpuSeconds {
            for value in values { writtenBytes += try value.wireJSON().count }
        }
        #expect(encodedBytes == writtenBytes)
        let each = { (seconds: Double) in String(format: "%.2f µs", seconds / Double(values.count) * 1e6) }
        print(
            "\(values.count) \(name) of \(writtenBytes / values.count) bytes, CPU time each: JSONEncoder \(each(encoding)), JSONWriter \(each(writing)), \(String(format: "%.1f", encoding / writing))x"
        )
    }

    /// The thread's CPU time rather than the wall clock's, so that other work on a shared
    /// machine weighs less on the comparison.
    func cpuSeconds(_ work: () throws -> Void) rethrows -> Double {
        func now() -> Double {
            var time = timespec()
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
            return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
        }
        let start = now()
        try work()
        return now() - start
    }
}
