import Foundation
import Geofence
import Ingest
import Shared
import Testing

extension ExplanationSuites {
    /// Decision records (docs/evaluation-rules.md#decision-records): every reason code read back from the running
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
            let offline = try await replayExplained(zones: zones, fixes: trips.flatMap(\.fixes))

            try await harness.run { ingestPort, _ in
                let base = "http://127.0.0.1:\(ingestPort)/v1"
                for (_, fixes) in trips {
                    let body = try fixesBody(fixes)
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
                    let body = try WireJSON.decoder().decode(PageAnswer<DecisionRecord>.self, from: Data(page.body.utf8))
                    pages += body.items
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
                    let body = try fixesBody(fixes)
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
}


/// Reads a device's decision records (newest first) until `count` are there.
func waitForRecords(count: Int, of deviceId: String, base: String, key: String) async throws -> [DecisionRecord] {
    let deadline = ContinuousClock.now + .seconds(60)
    var records: [DecisionRecord] = []
    while ContinuousClock.now < deadline {
        let answer = try await post(Data(), to: "\(base)/devices/\(deviceId)/decisions?limit=1000", key: key, method: .GET)
        try #require(answer.status == 200, "\(answer.body)")
        records = try WireJSON.decoder().decode(PageAnswer<DecisionRecord>.self, from: Data(answer.body.utf8)).items
        if records.count >= count { return records }
        try await Task.sleep(for: .milliseconds(200))
    }
    throw TestFailure("device \(deviceId) has \(records.count) decision records of \(count) after 60 s")
}

/// A `POST /v1/fixes` body of these fixes, each exactly as `checkin replay` reads it.
func fixesBody(_ fixes: [Fix]) throws -> Data {
    var body = Array(#"{"fixes":["#.utf8)
    for (index, fix) in fixes.enumerated() {
        if index > 0 { body.append(UInt8(ascii: ",")) }
        body += try fix.wireJSON()
    }
    body += Array("]}".utf8)
    return Data(body)
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
func replayExplained(zones: ZonesDocument, fixes: [Fix]) async throws -> [ReplayedDecision] {
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
    let outcome = try await CommandOutcome.run(["replay", "--explain", "--zones", zonesFile.path, "--fixes", fixesFile.path])
    try #require(outcome.exitCode == 0, "checkin replay --explain exited \(outcome.exitCode): \(outcome.standardError)")
    return try outcome.standardOutput.split(separator: "\n").map {
        try WireJSON.decoder().decode(ReplayedDecision.self, from: Data($0.utf8))
    }
}

extension ExplanationSuites {
    /// Live decision records equal `checkin replay --explain`'s over generated zones and trips.
    @Suite(.serialized) struct DecisionRecordPropertyTests {
        /// Random circles (with random MRTs, check-outs, speed, bearing, percentage and
        /// sequential conditions), a geoline and a beacon zone; random walks through them with
        /// random accuracy, speed, bearing and mode, beacon sightings, resent and late fixes.
        @Test(arguments: [7, 11] as [UInt64]) func liveRecordsEqualTheOfflineOnes(seed: UInt64) async throws {
            var rng = SeededGenerator(seed: seed)
            let centre = ExplanationTrips.centre(0)
            func around(_ metres: Double) -> Position {
                let distance = Double.random(in: 0...metres, using: &rng), angle = Double.random(in: 0..<(2 * .pi), using: &rng)
                return Position(
                    lon: centre.lon + distance * cos(angle) / ExplanationTrips.metresPerDegreeLon,
                    lat: centre.lat + distance * sin(angle) / ExplanationTrips.metresPerDegreeLat)
            }
            var zones: [ZoneDefinition] = []
            for index in 0..<15 {
                var conditions: ZoneConditions? = nil
                switch Int.random(in: 0..<6, using: &rng) {
                case 0: conditions = ZoneConditions(maxSpeed: 4)
                case 1: conditions = ZoneConditions(bearing: BearingRange(from: 300, to: 60))
                case 2: conditions = ZoneConditions(percentageCrossed: 30)
                case 3 where index > 0: conditions = ZoneConditions(sequential: SequentialCondition(afterZoneId: "r0", withinSeconds: 600))
                default: break
                }
                zones.append(
                    ZoneDefinition(
                        id: "r\(index)", name: "R\(index)", minimumRetriggerTime: [0, 120, 900].randomElement(using: &rng)!,
                        checkOutEnabled: Bool.random(using: &rng), enabled: Int.random(in: 0..<10, using: &rng) > 0,
                        conditions: conditions,
                        fences: [
                            FenceDefinition(
                                id: "rf\(index)", geometry: .point(around(800)), radius: Double.random(in: 60...300, using: &rng))
                        ]))
            }
            zones.append(
                ZoneDefinition(
                    id: "line", name: "Line",
                    fences: [FenceDefinition(id: "line-f", geometry: .lineString([around(900), around(900)]))]))
            zones.append(
                ZoneDefinition(
                    id: "door", name: "Door",
                    beacons: [BeaconDefinition(id: "door-b", uuid: ExplanationTrips.beaconUUID, rssiThreshold: -70)]))
            let document = ZonesDocument(zones: zones)
            let harness = {
                var harness = PipelineHarness()
                harness.zones = document
                return harness
            }()
            // Every fix within the stale time (7200 s) before now, so that the stale sweep has nothing to
            // time out between two batches of a device (a replay has no such sweep).
            let start = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 - 7_000).rounded(.down))
            var trips: [[Fix]] = []
            for device in 0..<8 {
                var fixes: [Fix] = []
                var position = around(900)
                var time = 0.0
                for step in 0..<40 {
                    // Seven decimals (1 cm), as devices send them: a number of more than 17 characters is
                    // read as JSONSerialization reads it, which may move it by an ulp at each of ingest's
                    // and the evaluator's reads, where a replay reads it once.
                    position = Position(
                        lon: ((position.lon + Double.random(in: -250...250, using: &rng) / ExplanationTrips.metresPerDegreeLon)
                            * 1e7).rounded() / 1e7,
                        lat: ((position.lat + Double.random(in: -250...250, using: &rng) / ExplanationTrips.metresPerDegreeLat)
                            * 1e7).rounded() / 1e7)
                    let gap: Double = [10, 30, 90, 650].randomElement(using: &rng)!
                    time += time + gap > 6_700 ? 5 : gap
                    var at = time
                    var fixId = "p\(seed)-\(device)-\(step)"
                    if step > 2, Int.random(in: 0..<15, using: &rng) == 0 { at = time - 200 }  // late
                    if step > 2, Int.random(in: 0..<15, using: &rng) == 0 { fixId = "p\(seed)-\(device)-\(step - 1)" }  // resent
                    fixes.append(
                        Fix(
                            projectId: harness.projectId, deviceId: "prop-\(seed)-\(device)-\(harness.suffix)",
                            timestamp: start.addingTimeInterval(at), lat: position.lat, lon: position.lon,
                            accuracy: [5, 20, 60, 150].randomElement(using: &rng)!,
                            speed: Bool.random(using: &rng) ? Double.random(in: 0...8, using: &rng).rounded() : nil,
                            bearing: Bool.random(using: &rng) ? Double.random(in: 0..<360, using: &rng).rounded() : nil,
                            mode: Int.random(in: 0..<10, using: &rng) == 0 ? .restart : .normal,
                            beacons: Int.random(in: 0..<8, using: &rng) == 0
                                ? [BeaconSighting(uuid: ExplanationTrips.beaconUUID, rssi: [-90, -60].randomElement(using: &rng)!)] : [],
                            fixId: fixId))
                }
                trips.append(fixes)
            }
            let generated = trips
            let offline = try await replayExplained(zones: document, fixes: generated.flatMap { $0 })
            #expect(Set(offline.flatMap { $0.record.entries.compactMap(\.reason) }).count >= 4)

            try await harness.run { ingestPort, _ in
                let base = "http://127.0.0.1:\(ingestPort)/v1"
                for fixes in generated {
                    let body = try fixesBody(fixes)
                    let answer = try await post(body, to: "\(base)/fixes", key: harness.deviceKey)
                    #expect(answer.status == 202, "\(answer.body)")
                }
                for fixes in generated {
                    let deviceId = fixes[0].deviceId
                    let live = try await waitForRecords(count: fixes.count, of: deviceId, base: base, key: harness.managementKey)
                    let expected = offline.filter { $0.deviceId == deviceId }.map(\.record)
                    let (liveLines, offlineLines) = (try comparable(live.reversed()), try comparable(expected))
                    let first = zip(liveLines, offlineLines).first { $0 != $1 }
                    #expect(
                        liveLines == offlineLines,
                        "device \(deviceId) differs from the replay (\(liveLines.count) and \(offlineLines.count) records); first: \(first.map { "live \($0.0)\noffline \($0.1)" } ?? "-")")
                }
            }
        }
    }
}

/// `checkin replay` refuses a line that is not a fix (here one without `projectId`): it
/// names the line on stderr, replays the rest and exits 1.
@Test func replayExitsNonZeroOnALineThatIsNotAFix() async throws {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("replay-\(UUID().uuidString.prefix(8))")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    let zones = directory.appendingPathComponent("zones.json")
    try WireJSON.encoder().encode(ExplanationTrips.zones(inactiveHour: 0)).write(to: zones)
    let fixes = directory.appendingPathComponent("fixes.jsonl")
    let good = Fix(
        projectId: "p", deviceId: "d", timestamp: Date(timeIntervalSince1970: 1_800_000_000), lat: 52.5, lon: 13.3,
        fixId: "good")
    var lines = Data(try good.wireJSON())
    lines.append(contentsOf: Array("\n{\"deviceId\":\"d\",\"timestamp\":\"2027-01-15T08:00:10Z\",\"lat\":52.5,\"lon\":13.3}\n".utf8))
    try lines.write(to: fixes)
    let outcome = try await CommandOutcome.run(["replay", "--explain", "--zones", zones.path, "--fixes", fixes.path])
    let complaints = outcome.standardError
    #expect(outcome.exitCode == 1)
    #expect(complaints.contains("line 2") && complaints.contains("projectId"), "\(complaints)")
    #expect(outcome.standardOutput.split(separator: "\n").count == 1, "the good line is still replayed")
}

/// SplitMix64: a generated world is rebuilt exactly from its seed.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
