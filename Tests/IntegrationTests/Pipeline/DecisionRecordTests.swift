import Foundation
import Geofence
import Shared
import Testing

/// Decision records (SPEC section 6): every reason code read back from the running
/// pipeline's API, the same records from `checkin replay --explain`, and the device view.
@Suite(.serialized) struct DecisionRecordTests {
    /// One device per case, all through one pipeline: the last fix of each trip leaves the
    /// entry its case names, with its numbers, and `checkin replay --explain` over the same
    /// zones and fixes writes the very same records.
    @Test func everyReasonIsExplainedLiveAndOffline() async throws {
        let start = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 - 2000).rounded(.down))
        let startHour = Calendar(identifier: .gregorian).dateComponents(in: TimeZone(identifier: "UTC")!, from: start).hour!
        let zones = ExplanationTrips.zones(inactiveHour: (startHour + 12) % 24)
        let harness = {
            var harness = PipelineHarness()
            harness.zones = zones
            return harness
        }()
        let trips = ExplanationTrips.cases.map { trip in
            (trip: trip, fixes: ExplanationTrips.fixes(
                of: trip, projectId: harness.projectId, deviceId: "explain-\(trip.name)-\(harness.suffix)", start: start))
        }
        let offline = try replayExplained(zones: zones, fixes: trips.flatMap(\.fixes))

        try await harness.run { ingestPort, _ in
            let base = "http://127.0.0.1:\(ingestPort)/v1"
            for (_, fixes) in trips {
                let body = try JSONSerialization.data(withJSONObject: [
                    "fixes": try fixes.map { try JSONSerialization.jsonObject(with: Data(try $0.wireJSON())) }
                ])
                let answer = try await post(body, to: "\(base)/fixes", key: harness.deviceKey)
                #expect(answer.status == 202, "\(answer.body)")
            }
            for (trip, fixes) in trips {
                let deviceId = fixes[0].deviceId
                let live = try await waitForRecords(
                    count: fixes.count, of: deviceId, base: base, key: harness.managementKey)
                let last = try #require(live.first, "no records for \(trip.name)")
                let entry = try #require(
                    last.entries.first { $0.outcome == trip.outcome && $0.zoneId == trip.zoneId },
                    "\(trip.name): the last fix's entries are \(last.entries)")
                #expect(entry.reason == trip.reason, "\(trip.name): \(entry)")
                #expect(trip.detailHolds(entry.detail), "\(trip.name): detail \(entry.detail)")
                #expect(live.allSatisfy { $0.evaluatedAt != nil })
                let expected = offline.filter { $0.deviceId == deviceId }.map(\.record)
                #expect(
                    try comparable(live.reversed()) == comparable(expected),
                    "\(trip.name): the live records differ from checkin replay --explain")
            }
            // Pages: newest first, each page's cursor leading to the next older one.
            let mrtDevice = "explain-mrt-\(harness.suffix)"
            var pages: [DecisionRecord] = []
            var cursor: String? = nil
            repeat {
                let url = "\(base)/devices/\(mrtDevice)/decisions?limit=3" + (cursor.map { "&cursor=\($0)" } ?? "")
                let page = try await post(Data(), to: url, key: harness.managementKey, method: .GET)
                let body = try WireJSON.decoder().decode(DecisionPageBody.self, from: Data(page.body.utf8))
                pages += body.decisions
                cursor = body.nextCursor
            } while cursor != nil
            #expect(pages.map(\.timestamp) == pages.map(\.timestamp).sorted(by: >))
            #expect(pages.count == 4)
            let refused = try await post(Data(), to: "\(base)/devices/x/decisions?limit=5000", key: harness.managementKey, method: .GET)
            #expect(refused.status == 400 && refused.contentType == "application/problem+json")
            let unauthorised = try await post(Data(), to: "\(base)/devices/x/decisions", key: harness.deviceKey, method: .GET)
            #expect(unauthorised.status == 401)
        }
    }

    /// The device view during a trip: the open check-in with its id and time, the stale
    /// deadline, and a zone entered within its MRT with the reason and the MRT's end.
    @Test func deviceViewShowsWhatTheStateHolds() async throws {
        let start = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 - 600).rounded(.down))
        let harness = {
            var harness = PipelineHarness()
            harness.zones = ExplanationTrips.zones(inactiveHour: 0)
            return harness
        }()
        let inside = ExplanationTrips.Case(
            name: "inside", outcome: .checkedIn, zoneId: "z-plain", detailHolds: { _ in true },
            fixes: [.init(at: 0, position: ExplanationTrips.outside(9)), .init(at: 30, position: ExplanationTrips.centre(9))])
        let mrt = try #require(ExplanationTrips.cases.first { $0.name == "mrt" })
        let openDevice = "view-open-\(harness.suffix)"
        let mrtDevice = "view-mrt-\(harness.suffix)"
        try await harness.run { ingestPort, received in
            let base = "http://127.0.0.1:\(ingestPort)/v1"
            for (trip, deviceId) in [(inside, openDevice), (mrt, mrtDevice)] {
                let fixes = ExplanationTrips.fixes(of: trip, projectId: harness.projectId, deviceId: deviceId, start: start)
                let body = try JSONSerialization.data(withJSONObject: [
                    "fixes": try fixes.map { try JSONSerialization.jsonObject(with: Data(try $0.wireJSON())) }
                ])
                #expect(try await post(body, to: "\(base)/fixes", key: harness.deviceKey).status == 202)
                _ = try await waitForRecords(count: fixes.count, of: deviceId, base: base, key: harness.managementKey)
            }
            try await received.wait(timeout: .seconds(60)) { payloads in
                payloads.contains { $0.data.deviceId == openDevice && $0.data.type == .checkin }
            }
            let checkIn = try #require(await received.payloads.first { $0.data.deviceId == openDevice }?.data)

            let open = try await deviceView(openDevice, base: base, key: harness.managementKey)
            #expect(open.openCheckIns.map(\.zoneId) == ["z-plain"])
            #expect(open.openCheckIns.first?.checkInId == checkIn.checkInId)
            #expect(open.openCheckIns.first?.fenceId == "f-plain")
            #expect(open.openCheckIns.first?.since == start.addingTimeInterval(30))
            #expect(open.staleCheckOutAt == start.addingTimeInterval(30 + 7200))
            #expect(open.sequence == 1)
            #expect(open.lastFix?.timestamp == start.addingTimeInterval(30))
            #expect(open.insideWithoutCheckIn.isEmpty)

            let blocked = try await deviceView(mrtDevice, base: base, key: harness.managementKey)
            #expect(blocked.openCheckIns.isEmpty)
            #expect(blocked.staleCheckOutAt == nil)
            #expect(blocked.sequence == 2)
            #expect(blocked.insideWithoutCheckIn.map(\.zoneId) == ["z-mrt"])
            #expect(blocked.insideWithoutCheckIn.first?.reason == .minimumRetriggerTime)
            #expect(blocked.minimumRetriggerTimes == [RetriggerView(zoneId: "z-mrt", until: start.addingTimeInterval(60 + 3600))])

            let missing = try await post(Data(), to: "\(base)/devices/nobody-\(harness.suffix)", key: harness.managementKey, method: .GET)
            #expect(missing.status == 404 && missing.contentType == "application/problem+json")
        }
    }

    func deviceView(_ deviceId: String, base: String, key: String) async throws -> DeviceView {
        let answer = try await post(Data(), to: "\(base)/devices/\(deviceId)", key: key, method: .GET)
        try #require(answer.status == 200, "\(answer.body)")
        return try WireJSON.decoder().decode(DeviceView.self, from: Data(answer.body.utf8))
    }
}

/// The API's page of decision records.
struct DecisionPageBody: Decodable {
    var decisions: [DecisionRecord]
    var nextCursor: String?
}

/// Reads a device's decision records (newest first) until `count` are there.
func waitForRecords(count: Int, of deviceId: String, base: String, key: String) async throws -> [DecisionRecord] {
    let deadline = ContinuousClock.now + .seconds(60)
    var records: [DecisionRecord] = []
    while ContinuousClock.now < deadline {
        let answer = try await post(Data(), to: "\(base)/devices/\(deviceId)/decisions?limit=1000", key: key, method: .GET)
        try #require(answer.status == 200, "\(answer.body)")
        records = try WireJSON.decoder().decode(DecisionPageBody.self, from: Data(answer.body.utf8)).decisions
        if records.count >= count { return records }
        try await Task.sleep(for: .milliseconds(200))
    }
    throw TestFailure("device \(deviceId) has \(records.count) decision records of \(count) after 60 s")
}

/// The records as JSON without the time they were evaluated, which only the live ones have.
func comparable(_ records: some Sequence<DecisionRecord>) throws -> [String] {
    try records.map { record in
        var record = record
        record.evaluatedAt = nil
        return String(decoding: try WireJSON.encoder().encode(record), as: UTF8.self)
    }
}

/// Runs `checkin replay --explain` over the zones and fixes, and reads its lines.
func replayExplained(zones: ZonesDocument, fixes: [Fix]) throws -> [ReplayedDecision] {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("explain-\(UUID().uuidString.prefix(8))")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    let zonesFile = directory.appendingPathComponent("zones.json")
    let fixesFile = directory.appendingPathComponent("fixes.jsonl")
    try WireJSON.encoder().encode(zones).write(to: zonesFile)
    var lines = Data()
    for fix in fixes {
        lines.append(contentsOf: try fix.wireJSON())
        lines.append(UInt8(ascii: "\n"))
    }
    try lines.write(to: fixesFile)
    let process = Process()
    process.executableURL = try ServiceProcess.executable()
    process.arguments = ["replay", "--explain", "--zones", zonesFile.path, "--fixes", fixesFile.path]
    let output = Pipe()
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    try #require(process.terminationStatus == 0, "checkin replay --explain exited \(process.terminationStatus)")
    return try String(decoding: data, as: UTF8.self).split(separator: "\n").map {
        try WireJSON.decoder().decode(ReplayedDecision.self, from: Data($0.utf8))
    }
}
