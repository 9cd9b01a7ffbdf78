import Foundation
import Ingest
import Kafka
import Shared
import Testing

/// `POST /v1/fixes` takes JSON by RFC 8259 and only the members of the fix format: a misspelt
/// member is named in the 400 with the batch's other problems, and nothing of the batch is
/// published. `CHECKIN_FIXES_IGNORE_UNKNOWN_MEMBERS` skips such members instead.
@Suite(.serialized) struct StrictFixesTests {
    typealias Answer = IngestLimitsTests.Answer

    /// Runs `body` against the Ingest application of a fresh project, with `limits`.
    func withIngest(
        limits: InputLimits = InputLimits(), _ body: @Sendable (PipelineHarness, _ send: IngestLimitsTests.Sender) async throws -> Void
    ) async throws {
        let harness = PipelineHarness()
        try await harness.prepare()
        let configuration = IngestConfiguration(port: 0, limits: limits, topics: harness.topics)
        try await withIngestApplication(harness, configuration: configuration) { _, client in
            try await body(harness, IngestLimitsTests.Sender(client: client))
        }
    }

    static func fix(_ deviceId: String, _ index: Int, _ extra: String = "") -> String {
        let timestamp = RFC3339.format(Date().addingTimeInterval(Double(index - 10)))
        return #"{"deviceId":"\#(deviceId)","fixId":"\#(deviceId)-\#(index)","timestamp":"\#(timestamp)","#
            + #""lat":-37.81,"lon":144.96\#(extra)}"#
    }

    /// The `invalid-params` of a problem answer, as name and reason.
    static func invalidParameters(_ answer: Answer) throws -> [[String: String]] {
        let problem = try #require(try JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any])
        return try #require(problem["invalid-params"] as? [[String: String]])
    }

    @Test func unknownMembersAreNamedWithEveryOtherProblemAndNothingIsPublished() async throws {
        try await withIngest { harness, send in
            let device = "phone-" + UUID().uuidString.prefix(8).lowercased()
            let misspelt = Self.fix(device, 3, #","accuarcy":5,"beacons":[{"uuid":"u","rssi":-60,"txPower":-59}]"#)
            let outOfRange = Self.fix(device, 1, #","lat":91"#)
            let refused = #"{"fixes":[\#(Self.fix(device, 0)),\#(outOfRange),\#(Self.fix(device, 2)),\#(misspelt)]}"#
            let answer = try await send(.post, "/v1/fixes", key: harness.deviceKey, body: Array(refused.utf8))
            #expect(answer.status == 400)
            #expect(answer.isProblem)
            let parameters = try Self.invalidParameters(answer)
            #expect(
                parameters == [
                    ["name": "fixes[1].lat", "reason": "must be between -90 and 90"],
                    ["name": "fixes[3].accuarcy", "reason": "is not a member of a fix"],
                    ["name": "fixes[3].beacons[0].txPower", "reason": "is not a member of a beacon sighting"],
                ])

            // The same device's next batch is the first record of its partition: the refused one published nothing.
            let next = #"{"fixes":[\#(Self.fix(device, 4))]}"#
            let accepted = try await send(.post, "/v1/fixes", key: harness.deviceKey, body: Array(next.utf8))
            #expect(accepted.status == 202)
            let records = try await consumeAll(topic: harness.topics.fixes, logger: harness.logger)
            let published = try records.map { try WireJSON.decoder().decode(Fix.self, from: Data($0.value)).fixId }
            #expect(published == ["\(device)-4"])
        }
    }

    @Test func trailingCommasAreNotJSON() async throws {
        try await withIngest(limits: InputLimits(ignoresUnknownFixMembers: true)) { harness, send in
            for body in [#"{"fixes":[\#(Self.fix("phone", 0)),]}"#, #"{"fixes":[\#(Self.fix("phone", 0, ","))]}"#] {
                let answer = try await send(.post, "/v1/fixes", key: harness.deviceKey, body: Array(body.utf8))
                #expect(answer.status == 400, "\(body)")
                #expect(answer.isProblem)
                #expect(answer.body.contains("the body is not valid JSON"))
            }
        }
    }

    @Test func anEnvelopeMemberBesideFixesIsNamed() async throws {
        try await withIngest { harness, send in
            let answer = try await send(
                .post, "/v1/fixes", key: harness.deviceKey, body: Array(#"{"sentAt":"now","fixes":[\#(Self.fix("phone", 0))]}"#.utf8))
            #expect(answer.status == 400)
            #expect(try Self.invalidParameters(answer) == [["name": "sentAt", "reason": "is not a member of a batch"]])
        }
    }

    /// Devices that send members the format lacks keep working where the deployment says so.
    @Test func unknownMembersAreSkippedWhenTheSettingSaysSo() async throws {
        try await withIngest(limits: InputLimits(ignoresUnknownFixMembers: true)) { harness, send in
            let device = "phone-" + UUID().uuidString.prefix(8).lowercased()
            let body = #"{"sentAt":"now","fixes":[\#(Self.fix(device, 0, #","accuarcy":5,"battery":0.5"#))]}"#
            let answer = try await send(.post, "/v1/fixes", key: harness.deviceKey, body: Array(body.utf8))
            #expect(answer.status == 202, "\(answer.body)")
            let records = try await consume(topic: harness.topics.fixes, count: 1, logger: harness.logger)
            let fix = try WireJSON.decoder().decode(Fix.self, from: Data(records[0].value))
            #expect(fix.fixId == "\(device)-0" && fix.accuracy == nil)
        }
    }
}
