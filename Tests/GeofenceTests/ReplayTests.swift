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
        let zones = try WireJSON.decoder().decode(
            ZonesDocument.self, from: Data(contentsOf: Self.examples.appendingPathComponent("zones.json")))
        let trip = try String(contentsOf: Self.examples.appendingPathComponent("trip.jsonl"), encoding: .utf8)
        let expected = try String(contentsOf: Self.examples.appendingPathComponent("expected-events.jsonl"), encoding: .utf8)
        var events: [String] = []
        var problems: [String] = []
        let summary = try Replay.run(
            zones: zones, fixLines: trip.split(separator: "\n", omittingEmptySubsequences: false),
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

    /// Refused before any fix, not at the first fix of a project: a replay without fixes
    /// still says what is wrong with its zones.
    @Test func invalidZonesAreRefusedWithTheirProblems() throws {
        let zones = try WireJSON.decoder().decode(
            ZonesDocument.self,
            from: Data(
                #"{"zones": [{"id": "z", "fences": [{"id": "f", "geometry": {"type": "Point", "coordinates": [0, 0]}, "radius": -1}]}]}"#
                    .utf8))
        #expect(throws: ZoneValidationError.self) {
            try Replay.run(zones: zones, fixLines: [String](), emitEvent: { _ in }, reportProblem: { _ in })
        }
    }

    @Test func lateAndDuplicateLinesAreCounted() throws {
        let zones = ZonesDocument(zones: [])
        let fix = #"{"projectId": "p", "deviceId": "d", "timestamp": "2026-06-01T10:00:00Z", "lat": 10.5, "lon": 20.5, "fixId": "a"}"#
        let older = #"{"projectId": "p", "deviceId": "d", "timestamp": "2026-06-01T09:00:00Z", "lat": 10.5, "lon": 20.5}"#
        var problems: [String] = []
        let summary = try Replay.run(
            zones: zones, fixLines: [fix, fix, "", older, "not json"], emitEvent: { _ in },
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
        let zones = ZonesDocument(zones: [])
        func line(_ timestamp: String) -> String {
            #"{"projectId": "p", "deviceId": "d", "timestamp": "\#(timestamp)", "lat": 10.5, "lon": 20.5}"#
        }
        var problems: [String] = []
        let summary = try Replay.run(
            zones: zones,
            fixLines: [line("2026-06-01T10:00:00Z"), line("9999-12-31T00:00:00Z"), line("2026-06-01T10:01:00Z")],
            receivedAt: RFC3339.parse("2026-06-01T10:30:00Z"), emitEvent: { _ in },
            reportProblem: { problems.append($0) })
        #expect(summary.evaluated == 2)
        #expect(summary.late == 0)
        #expect(summary.rejected == 1)
        #expect(problems.count == 1)
        #expect(problems.first?.hasPrefix("line 2: timestamp: must be at most 300 s after") == true)
    }

    /// A line is judged as the evaluator judges a record: a member fixes do not have is
    /// refused by name unless the limits skip such members; a trailing comma is refused either way.
    @Test func unknownMembersAndTrailingCommasAreJudgedAsTheEvaluatorJudgesThem() throws {
        let lines = [
            #"{"projectId": "p", "deviceId": "d", "timestamp": "2026-06-01T10:00:00Z", "lat": 10.5, "lon": 20.5, "accuarcy": 5}"#,
            #"{"projectId": "p", "deviceId": "d", "timestamp": "2026-06-01T10:01:00Z", "lat": 10.5, "lon": 20.5,}"#,
        ]
        for limits in [InputLimits(), InputLimits(ignoresUnknownFixMembers: true)] {
            var problems: [String] = []
            let summary = try Replay.run(
                zones: ZonesDocument(zones: []), fixLines: lines, limits: limits, emitEvent: { _ in },
                reportProblem: { problems.append($0) })
            let skipsUnknownMembers = limits.ignoresUnknownFixMembers
            #expect(summary.evaluated == (skipsUnknownMembers ? 1 : 0))
            #expect(
                problems
                    == (skipsUnknownMembers ? [] : ["line 1: accuarcy: is not a member of a fix"]) + ["line 2: $: is not valid JSON"])
        }
    }
}

/// An event keeps the millisecond its fix gave: a fix at `.123Z` checks in at `.123Z`,
/// for every millisecond of a second.
@Suite struct EventMillisecondTests {
    static let zones = try! WireJSON.decoder().decode(
        ZonesDocument.self,
        from: Data(
            #"{"zones": [{"id": "z", "fences": [{"id": "f", "geometry": {"type": "Point", "coordinates": [0, 0]}, "radius": 100}]}]}"#.utf8)
    )

    @Test(arguments: ["2026-11-22T10:00", "2004-03-10T00:03"])
    func checkInKeepsTheFixsMillisecond(minute: String) throws {
        var changed: [String] = []
        for millisecond in 0..<1000 {
            let inside = minute + ":30." + String(format: "%03d", millisecond) + "Z"
            let lines = [
                #"{"projectId": "p", "deviceId": "d", "timestamp": "\#(minute):00.000Z", "lat": 0, "lon": 0.01, "accuracy": 5}"#,
                #"{"projectId": "p", "deviceId": "d", "timestamp": "\#(inside)", "lat": 0, "lon": 0, "accuracy": 5}"#,
            ]
            var events: [String] = []
            _ = try Replay.run(
                zones: Self.zones, fixLines: lines, emitEvent: { events.append($0) }, reportProblem: { _ in })
            let event = try #require(events.first)
            let decoded = try WireJSON.decoder().decode(CheckEvent.self, from: Data(event.utf8))
            #expect(decoded.type == .checkin)
            if !event.contains(#""timestamp":"\#(inside)""#) { changed.append(inside) }
        }
        #expect(changed.isEmpty, "\(changed.count) of 1000 check-ins changed their fix's time, e.g. \(changed.prefix(3))")
    }
}
