import ServiceSupport
import Testing

/// Series whose label sets come and go (webhook endpoints, partitions) disappear from
/// `/metrics` when they are gone, instead of exporting their last value forever: a
/// deleted endpoint that was disabled would otherwise keep its alert firing.
@Suite struct GaugeFamilyTests {
    @Test func seriesNoLongerReportedAreRemoved() {
        MetricsBootstrap.prometheus()
        let name = "test_gauge_family_\(UInt32.random(in: 0...UInt32.max))"
        let family = GaugeFamily(name: name)
        family.update([
            .init(labels: [("endpoint", "a")], value: 1), .init(labels: [("endpoint", "b")], value: 0),
        ])
        var text = emitted()
        #expect(text.contains(#"\#(name){endpoint="a"} 1.0"#))
        #expect(text.contains(#"\#(name){endpoint="b"} 0.0"#))

        family.update([.init(labels: [("endpoint", "a")], value: 5)])
        text = emitted()
        #expect(text.contains(#"\#(name){endpoint="a"} 5.0"#))
        #expect(!text.contains(#"\#(name){endpoint="b"}"#))
    }

    func emitted() -> String {
        var buffer: [UInt8] = []
        MetricsBootstrap.prometheus().emit(into: &buffer)
        return String(decoding: buffer, as: UTF8.self)
    }
}
