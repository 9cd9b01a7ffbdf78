import Foundation
import Kafka
import Persistence
import PostgresNIO
import Shared
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Three evaluators, killed, frozen and cut off from a restarting Postgres while
/// fixes flow, decide exactly what `checkin replay` decides from the same fixes, and
/// every poison record ends on the dead-letter topic, none in a stalled partition.
@Suite(.serialized) struct ChaosTests {
    @Test func eventsUnderChaosEqualReplay() async throws {
        let cluster = try EvaluatorCluster()
        try await withCleanUp({ await cluster.stopAll() }) {
            try await cluster.prepare()
            let projectId = cluster.harness.projectId
            for _ in 0..<3 { try cluster.startEvaluator() }
            for index in 0..<3 { try await cluster.waitUntilReady(index) }

            // 40 devices, each walking the trip (one check-in, one check-out), in four waves;
            // each wave also carries poison: a device id Postgres refuses, and a record that is no fix.
            let trips = (0..<40).map { TestTrip(projectId: projectId, deviceId: "chaos-\($0)-\(cluster.harness.suffix)") }
            var lines: [String] = []
            var poisonRecords = 0
            func wave(_ range: Range<Int>) async throws {
                var fixes: [[String: Any]] = []
                for trip in trips { fixes += range.map(trip.fix) }
                let poison = TestTrip(projectId: projectId, deviceId: "poison\u{0}\(range.lowerBound)")
                fixes.append(poison.fix(0))
                poisonRecords += 1
                try await cluster.produce(fixes)
                try await cluster.produceRaw([Array("not a fix \(range.lowerBound)".utf8)])
                poisonRecords += 1
                lines += try fixes.map { String(decoding: try JSONSerialization.data(withJSONObject: $0), as: UTF8.self) }
            }

            try await wave(0..<2)
            try await Task.sleep(for: .seconds(1))
            cluster.evaluators[0].kill()
            try await wave(2..<4)
            try cluster.restart(0)
            cluster.evaluators[1].signal(SIGSTOP)
            try await wave(4..<5)
            try await Task.sleep(for: .seconds(8))
            cluster.evaluators[1].signal(SIGCONT)
            try await cluster.postgres.stop()
            try await wave(5..<7)
            try await Task.sleep(for: .seconds(3))
            try await cluster.postgres.start()
            cluster.evaluators[2].kill()
            try await wave(7..<9)
            try cluster.restart(2)

            // Every partition is processed to its end (dead letters included).
            let produced = trips.count * 9 + poisonRecords
            do {
                try await waitUntil("all \(produced) records processed", within: .seconds(120)) {
                    let rows = try await cluster.query(
                        "SELECT coalesce(sum(next_offset), 0)::int8 FROM consumer_offsets WHERE consumer_group = '\(cluster.harness.evaluatorGroup)'"
                    )
                    return try rows.first?.decode(Int64.self) == Int64(produced)
                }
                // Each batch's events are kept in the outbox with its offsets; the relay publishes
                // them after, so the topics are read once it has published every one.
                try await waitUntil("every event published from the outbox", within: .seconds(120)) {
                    let rows = try await cluster.query(
                        "SELECT count(*)::int8 FROM event_outbox WHERE consumer_group = '\(cluster.harness.evaluatorGroup)'")
                    return try rows.first?.decode(Int64.self) == 0
                }
            } catch {
                Issue.record("\(error)\n\(try await cluster.activity())\n\(cluster.logs)")
                return
            }

            let decoded = try await distinctEvents(cluster.harness)
            let replayed = try await replay(zones: TestTrip.zones, fixLines: lines)
            #expect(decoded.count == trips.count * 2)
            #expect(Set(decoded.keys) == Set(replayed.keys), "\(cluster.logs)")
            for (id, event) in replayed { #expect(decoded[id] == event, "event \(id) differs from replay") }

            let deadLetters = try await consumeAll(topic: cluster.harness.topics.fixesDeadLetter, logger: cluster.logger)
            let origins = Set(
                deadLetters.map { "\($0.headerTexts["checkin-origin-partition"] ?? "")/\($0.headerTexts["checkin-origin-offset"] ?? "")" })
            #expect(origins.count == poisonRecords)
        }
    }

    /// The events on both event topics, one per event id (at-least-once may repeat one).
    func distinctEvents(_ harness: PipelineHarness) async throws -> [String: CheckEvent] {
        var events: [String: CheckEvent] = [:]
        for topic in [harness.topics.checkIns, harness.topics.checkOuts] {
            for message in try await consumeAll(topic: topic, logger: harness.logger) {
                let event = try WireJSON.decoder().decode(CheckEvent.self, from: Data(message.value))
                if let earlier = events[event.eventId] { #expect(earlier == event, "a repeated event id carries another event") }
                events[event.eventId] = event
            }
        }
        return events
    }
}

/// What `checkin replay` prints for these zones and fix lines.
func replay(zones: ZonesDocument, fixLines: [String]) async throws -> [String: CheckEvent] {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("replay-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let zonesFile = directory.appendingPathComponent("zones.json")
    let fixesFile = directory.appendingPathComponent("fixes.jsonl")
    try WireJSON.encoder().encode(zones).write(to: zonesFile)
    try Data(fixLines.joined(separator: "\n").utf8).write(to: fixesFile)
    let process = Process()
    process.executableURL = try ServiceProcess.executable()
    process.arguments = ["replay", "--zones", zonesFile.path, "--fixes", fixesFile.path]
    let outputFile = directory.appendingPathComponent("events.jsonl")
    FileManager.default.createFile(atPath: outputFile.path, contents: nil)
    let output = try FileHandle(forWritingTo: outputFile)
    defer { try? output.close() }
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    try process.run()
    while process.isRunning { try await Task.sleep(for: .milliseconds(50)) }
    let data = try Data(contentsOf: outputFile)
    var events: [String: CheckEvent] = [:]
    for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
        let event = try WireJSON.decoder().decode(CheckEvent.self, from: Data(line.utf8))
        events[event.eventId] = event
    }
    return events
}
