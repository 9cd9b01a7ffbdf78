import Foundation
import Geofence
import Hummingbird
import ServiceSupport
import Shared
import Testing

/// The stale check-out is judged against the stream: a device whose fixes wait in the
/// topic is not silent, however long the evaluator was away; a device that really went
/// silent on a partition with nothing waiting still times out by the clock.
@Suite(.serialized) struct StaleCheckOutTests {
    static let staleAfter = 4.0

    /// A device inside the zone keeps reporting every second while the evaluator is
    /// stopped for more than twice `staleAfter` and after it is back: its fixes queue in
    /// the topic, and it is timed out only once it really goes silent, `staleAfter` after
    /// its last fix, with one check-in and one check-out in all.
    @Test func backlogLongerThanStaleAfterDoesNotTimeOutAReportingDevice() async throws {
        var configured = PipelineHarness()
        // A database of its own: another test's evaluator (with the usual two hours) would
        // sweep this device's state too, and set its deadline by its own staleAfter.
        configured.databaseURL = try await PipelineHarness.freshDatabaseURL()
        let harness = configured
        try await harness.prepare()
        let received = ReceivedWebhooks()
        let receiverPort = AsyncStream.makeStream(of: Int.self)
        let receiver = WebhookReceiver.application(secret: try WebhookSecret(harness.secret), received: received) {
            receiverPort.continuation.yield($0)
        }
        let logDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("checkin-\(harness.suffix)")
        try FileManager.default.createDirectory(at: logDirectory, withIntermediateDirectories: true)

        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await receiver.run() }
            defer { tasks.cancelAll() }
            var ports = receiverPort.stream.makeAsyncIterator()
            guard let port = await ports.next() else { throw TestFailure("receiver did not start") }
            try await harness.addEndpoint(url: "http://127.0.0.1:\(port)/hooks")

            let ingestPort = try freePort()
            var shared = harness.processEnvironment
            shared["CHECKIN_STALE_AFTER"] = String(Self.staleAfter)
            shared["CHECKIN_STALE_SWEEP_INTERVAL"] = "0.5"
            let services = try ["ingest", "evaluator", "notifier"].map { name in
                var environment = shared
                environment["CHECKIN_HTTP_PORT"] = String(name == "ingest" ? ingestPort : try freePort())
                return ServiceProcess(name: name, arguments: [name], environment: environment, logDirectory: logDirectory)
            }
            try await withProcessesStopped(services) {
                for service in services { try service.start() }
                let evaluator = services[1]
                try await waitForHealth(port: ingestPort)

                let device = ReportingDevice(
                    trip: TestTrip(projectId: harness.projectId), url: "http://127.0.0.1:\(ingestPort)/v1/fixes",
                    key: harness.deviceKey)
                let reporting = Task { try await device.report() }
                do {
                    try await received.wait(timeout: .seconds(60)) { payloads in
                        payloads.contains { $0.data.deviceId == device.trip.deviceId && $0.data.type == .checkin }
                    }
                    #expect(await evaluator.terminate(within: 20) != nil)
                    // No evaluator: the fixes queue in the topic for more than twice `staleAfter`.
                    try await Task.sleep(for: .seconds(Self.staleAfter * 2.5))
                    // Back, the evaluator's batches fail to commit for a while (retried), so that its
                    // sweeps run while the backlog still waits: the device must not be timed out then.
                    let refusal = OffsetCommitRefusal(
                        group: harness.evaluatorGroup, sqlState: "40001", until: Date().addingTimeInterval(12))
                    try await harness.execute(refusal.create)
                    try evaluator.start()
                    try await Task.sleep(for: .seconds(Self.staleAfter * 1.5))
                } catch {
                    await device.stop()
                    _ = try? await reporting.value
                    throw error
                }
                await device.stop()
                let lastFix = try await reporting.value
                try await harness.execute(OffsetCommitRefusal(group: harness.evaluatorGroup, sqlState: "40001").drop)

                do {
                    try await received.wait(timeout: .seconds(60)) { payloads in
                        payloads.contains { $0.data.deviceId == device.trip.deviceId && $0.data.type == .checkout }
                    }
                } catch {
                    for service in services { print("----- \(service.name) log -----\n\(service.logTail())") }
                    throw error
                }
                let mine = await received.payloads.filter { $0.data.deviceId == device.trip.deviceId }
                #expect(mine.map(\.data.type) == [.checkin, .checkout])
                let checkOut = try #require(mine.last?.data)
                #expect(checkOut.reason == .timeout)
                let checkOutTime = try #require(checkOut.checkOutTime)
                #expect(
                    abs(checkOutTime.timeIntervalSince(lastFix.addingTimeInterval(Self.staleAfter))) < 0.01,
                    "timed out at \(RFC3339.format(checkOutTime)); last fix \(RFC3339.format(lastFix))")
            }
        }
    }

    /// A device that reports into the zone and then goes silent, alone on its partition:
    /// nothing waits in the topic, so the clock decides, `staleAfter` after its last fix.
    @Test func silentDeviceOnAnIdlePartitionTimesOut() async throws {
        // Bootstrapped before the pipeline makes its counters, which read the factory once.
        let metrics = MetricsBootstrap.prometheus()
        let databaseURL = try await PipelineHarness.freshDatabaseURL()
        let harness = {
            var harness = PipelineHarness()
            // A database of its own: another test's evaluator (with the usual two hours) would
            // sweep this device's state too, and set its deadline by its own staleAfter.
            harness.databaseURL = databaseURL
            harness.engine = EngineConfiguration(staleAfter: Self.staleAfter)
            harness.staleSweepInterval = .milliseconds(500)
            return harness
        }()
        try await harness.run { ingestPort, received in
            let device = ReportingDevice(
                trip: TestTrip(projectId: harness.projectId), url: "http://127.0.0.1:\(ingestPort)/v1/fixes",
                key: harness.deviceKey)
            let reporting = Task { try await device.report() }
            try await Task.sleep(for: .seconds(2))
            await device.stop()
            let lastFix = try await reporting.value

            try await received.wait(timeout: .seconds(60)) { payloads in
                payloads.contains { $0.data.deviceId == device.trip.deviceId && $0.data.type == .checkout }
            }
            let mine = await received.payloads.filter { $0.data.deviceId == device.trip.deviceId }
            #expect(mine.map(\.data.type) == [.checkin, .checkout])
            let checkOut = try #require(mine.last?.data)
            #expect(checkOut.reason == .timeout)
            let checkOutTime = try #require(checkOut.checkOutTime)
            #expect(abs(checkOutTime.timeIntervalSince(lastFix.addingTimeInterval(Self.staleAfter))) < 0.01)
            // Counted under the event type's one name, told apart by what decided it.
            let counted = metrics.emitToString().split(separator: "\n")
                .filter { $0.hasPrefix("checkin_evaluator_events_total{") }
            #expect(counted.contains { $0.contains(#"type="checkout""#) && $0.contains(#"decided_by="stale-sweep""#) }, "\(counted)")
            #expect(counted.allSatisfy { $0.contains(#"type="checkin""#) || $0.contains(#"type="checkout""#) }, "\(counted)")
        }
    }
}

/// A device on the test trip that reports in real time through ingest: one fix outside
/// the zone, then one inside every second until stopped.
struct ReportingDevice: Sendable {
    let trip: TestTrip
    let url: String
    let key: String
    private let stopped = StopSignal()

    init(trip: TestTrip, url: String, key: String) {
        self.trip = trip
        self.url = url
        self.key = key
    }

    /// Reports until stopped; returns the time of its last fix (each one accepted by ingest).
    /// Fix times keep to a one-second grid whatever ingest's answer time, so a slow answer
    /// on a busy machine never opens a silence in the device's history.
    func report() async throws -> Date {
        let start = (Date().timeIntervalSince1970 * 1000).rounded(.down) / 1000
        var index = 0
        var last: Date?
        while await !stopped.isSet {
            let time = Date(timeIntervalSince1970: start + Double(index))
            let wait = time.timeIntervalSinceNow
            if wait > 0 { try await Task.sleep(for: .seconds(wait)) }
            var fix = trip.fix(index == 0 ? 0 : 4)
            fix["timestamp"] = RFC3339.format(time)
            fix["fixId"] = "\(trip.deviceId)-\(index)"
            let answer = try await post(try JSONSerialization.data(withJSONObject: ["fixes": [fix]]), to: url, key: key)
            guard answer.status == 202 else { throw TestFailure("ingest answered \(answer.status): \(answer.body)") }
            last = time
            index += 1
        }
        guard let last else { throw TestFailure("no fix was reported") }
        return last
    }

    /// Stops after the fix being sent, if any.
    func stop() async { await stopped.set() }
}

actor StopSignal {
    private(set) var isSet = false

    func set() { isSet = true }
}
