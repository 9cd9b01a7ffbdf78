import Foundation
import Shared
import Testing

/// Decoding costs time linear in the document's size, even for an object of many
/// members holding numbers `JSONSerialization` cannot hold (`"k1234":1e400`), which
/// the decoder must remember until the end of the object.
@Suite struct DecodingScalingTests {
    /// A fix object of about `bytes` bytes whose members are `"kN":1e400`, all distinct.
    static func unrepresentableMembers(bytes: Int) -> [UInt8] {
        var document = Array(#"{"projectId":"p","deviceId":"d""#.utf8)
        var index = 0
        while document.count < bytes {
            document += Array(#","k\#(index)":1e400"#.utf8)
            index += 1
        }
        document.append(UInt8(ascii: "}"))
        return document
    }

    /// Four times the members cost about four times the time (a quadratic decoder takes
    /// about sixteen): the ratio is bounded at eight, the least of three runs each.
    @Test func manyUnrepresentableMembersDecodeInLinearTime() {
        let small = Self.unrepresentableMembers(bytes: 64 * 1024)
        let large = Self.unrepresentableMembers(bytes: 256 * 1024)
        let smallSeconds = (0..<3).map { _ in decodingSeconds(small) }.min() ?? 0
        let largeSeconds = (0..<3).map { _ in decodingSeconds(large) }.min() ?? 0
        let ratio = largeSeconds / max(smallSeconds, 1e-6)
        print(
            String(
                format: "decoding %d bytes: %.4f s, %d bytes: %.4f s, ratio %.1f", small.count, smallSeconds, large.count,
                largeSeconds, ratio))
        #expect(ratio < 8)

        let megabyte = Self.unrepresentableMembers(bytes: 1_000_000)
        print(String(format: "decoding %d bytes of such members: %.4f s", megabyte.count, decodingSeconds(megabyte)))
    }

    /// The document is refused as `JSONSerialization` refuses it, whatever its size.
    @Test func manyUnrepresentableMembersAreStillRefused() {
        let document = Self.unrepresentableMembers(bytes: 64 * 1024)
        #expect((try? JSONSerialization.jsonObject(with: Data(document))) == nil)
        guard case .failure(let invalid) = FixJSONDecoder.decode(document, receivedAt: Date()) else {
            Issue.record("a document holding 1e400 was accepted")
            return
        }
        #expect(invalid.description.contains("is not valid JSON"))
    }

    func decodingSeconds(_ document: [UInt8]) -> Double {
        cpuSeconds { _ = FixJSONDecoder.decode(document, receivedAt: Date()) }
    }

    /// The thread's CPU time rather than the wall clock's, so that other work on a shared
    /// machine weighs less on the comparison.
    func cpuSeconds(_ work: () -> Void) -> Double {
        func now() -> Double {
            var time = timespec()
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
            return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
        }
        let start = now()
        work()
        return now() - start
    }
}
