import Foundation
import Shared
import Testing

@testable import Geofence

/// `checkin replay` over the committed example, and its handling of bad input.
@Suite struct ReplayTests {
    static let examples = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("examples")

    @Test func exampleTripGivesTheExpectedEvents() throws {
        let zones = try Data(contentsOf: Self.examples.appendingPathComponent("zones.json"))
        let trip = try String(contentsOf: Self.examples.appendingPathComponent("trip.jsonl"), encoding: .utf8)
        let expected = try String(contentsOf: Self.examples.appendingPathComponent("expected-events.jsonl"), encoding: .utf8)
        var events: [String] = []
        var problems: [String] = []
        let summary = try Replay.run(
            zonesJSON: zones, fixLines: trip.split(separator: "\n", omittingEmptySubsequences: false),
            emitEvent: { events.append($0) }, reportProblem: { problems.append($0) })
        #expect(events == expected.split(separator: "\n").map(String.init))
        #expect(problems.count == 1)
        #expect(problems.first?.hasPrefix("line 52: timestamp") == true)
        #expect(summary.checkIns == 4)
        #expect(summary.checkOuts == 3)
        #expect(summary.rejected == 1)
        let first = try WireJSON.decoder().decode(CheckEvent.self, from: Data(events[0].utf8))
        #expect(first.zone.customData["venue"] == "station")
        #expect(first.fence?.id == "concourse")
    }

    @Test func invalidZonesAreRefusedWithTheirProblems() {
        let zones = Data(
            #"{"zones": [{"id": "z", "fences": [{"id": "f", "geometry": {"type": "Point", "coordinates": [0, 0]}, "radius": -1}]}]}"#.utf8)
        #expect(throws: ZoneValidationError.self) {
            try Replay.run(zonesJSON: zones, fixLines: [String](), emitEvent: { _ in }, reportProblem: { _ in })
        }
        #expect(throws: Replay.ZonesError.self) {
            try Replay.run(zonesJSON: Data("{".utf8), fixLines: [String](), emitEvent: { _ in }, reportProblem: { _ in })
        }
    }

    @Test func lateAndDuplicateLinesAreCounted() throws {
        let zones = Data(#"{"zones": []}"#.utf8)
        let fix = #"{"projectId": "p", "deviceId": "d", "timestamp": "2026-06-01T10:00:00Z", "lat": 10.5, "lon": 20.5, "fixId": "a"}"#
        let older = #"{"projectId": "p", "deviceId": "d", "timestamp": "2026-06-01T09:00:00Z", "lat": 10.5, "lon": 20.5}"#
        var problems: [String] = []
        let summary = try Replay.run(
            zonesJSON: zones, fixLines: [fix, fix, "", older, "not json"], emitEvent: { _ in },
            reportProblem: { problems.append($0) })
        #expect(summary.evaluated == 1)
        #expect(summary.duplicates == 1)
        #expect(summary.late == 1)
        #expect(summary.rejected == 1)
        #expect(problems.map { $0.prefix(7) } == ["line 4:", "line 5:"])
    }

    /// With a receipt time, a fix dated far ahead of it is refused and the device's later
    /// fixes are still evaluated, instead of all being late after it.
    @Test func fixesFarAheadOfTheReceiptTimeAreRejected() throws {
        let zones = Data(#"{"zones": []}"#.utf8)
        func line(_ timestamp: String) -> String {
            #"{"projectId": "p", "deviceId": "d", "timestamp": "\#(timestamp)", "lat": 10.5, "lon": 20.5}"#
        }
        var problems: [String] = []
        let summary = try Replay.run(
            zonesJSON: zones,
            fixLines: [line("2026-06-01T10:00:00Z"), line("9999-12-31T00:00:00Z"), line("2026-06-01T10:01:00Z")],
            receivedAt: RFC3339.parse("2026-06-01T10:30:00Z"), emitEvent: { _ in },
            reportProblem: { problems.append($0) })
        #expect(summary.evaluated == 2)
        #expect(summary.late == 0)
        #expect(summary.rejected == 1)
        #expect(problems.count == 1)
        #expect(problems.first?.hasPrefix("line 2: timestamp: must be at most 300 s after") == true)
    }
}
