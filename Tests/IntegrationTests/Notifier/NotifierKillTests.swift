import Foundation
import Hummingbird
import Kafka
import KafkaTesting
import Logging
import Persistence
import Shared
import Testing

/// Two notifier processes share the work; each is killed with SIGKILL in the middle of a
/// burst and started again. The partner still gets every event, each device's in
/// `sequence` order, and never the same delivery from both notifiers at once.
///
/// `CHECKIN_TEST_BURST_EVENTS` sets the burst's size (default 300) and
/// `CHECKIN_TEST_PARTNER_DELAY_MS` how long the partner takes to answer (default 100); the
/// The figures of docs/performance.md are from larger bursts, among them one answered at once, to kill the
/// notifiers while they deliver thousands a second.
@Suite(.serialized) struct NotifierKillTests {
    @Test func killedNotifiersKeepEveryDeviceInOrder() async throws {
        let events = Int(ProcessInfo.processInfo.environment["CHECKIN_TEST_BURST_EVENTS"] ?? "") ?? 300
        let partnerDelay = Int(ProcessInfo.processInfo.environment["CHECKIN_TEST_PARTNER_DELAY_MS"] ?? "") ?? 100
        let perDevice = 10
        let devices = max(1, events / perDevice)
        var configured = PipelineHarness()
        configured.databaseURL = try await freshDatabaseURL(logger: configured.logger)
        let harness = configured
        try await harness.prepare()
        let logDirectory = try harness.makeLogDirectory()
        // A partner that takes a while to answer, so that the kills land on attempts in flight.
        let slowly: WebhookReceiver.Responder = { _, _ in
            if partnerDelay > 0 { try? await Task.sleep(for: .milliseconds(partnerDelay)) }
            return nil
        }
        try await withRegisteredReceiver(harness, respond: slowly) { received in

            let notifiers = try ["notifier-1", "notifier-2"].map { name in
                ServiceProcess(
                    name: name, arguments: ["notifier"],
                    environment: harness.processEnvironment.merging([
                        "CHECKIN_HTTP_PORT": String(try freePort()), "CHECKIN_LOG_LEVEL": "warning",
                    ]) { $1 },
                    logDirectory: logDirectory)
            }
            try await withProcessesStopped(notifiers) {
                for notifier in notifiers { try notifier.start() }

                try await Self.produceBurst(harness: harness, devices: devices, perDevice: perDevice)
                let total = devices * perDevice
                let burstStarted = ContinuousClock.now
                do {
                    for (victim, share) in [(notifiers[0], 0.2), (notifiers[1], 0.5)] {
                        try await received.wait(timeout: .seconds(120)) { $0.count >= Int(Double(total) * share) }
                        victim.kill()
                        try victim.start()
                    }
                    let lastKill = ContinuousClock.now
                    try await received.wait(timeout: .seconds(120)) { Set($0.map(\.data.eventId)).count >= total }
                    let took = (ContinuousClock.now - burstStarted).seconds
                    print(
                        "burst of \(total) events (partner answering in \(partnerDelay) ms): all delivered \(ContinuousClock.now - lastKill) after the last kill, \(String(format: "%.1f", took)) s after they were published, \(Int(Double(total) / took)) deliveries/s through both kills")
                } catch {
                    for notifier in notifiers { print("----- \(notifier.name) log -----\n\(notifier.log.suffix(4000))") }
                    throw error
                }

                let payloads = await received.payloads
                #expect(Set(payloads.map(\.data.eventId)).count == total)
                #expect(Self.inversions(in: payloads) == 0)
                #expect(await received.overlaps == 0)
                #expect(await received.rejected == 0)
            }
        }
    }

    /// Check-ins and check-outs of each device, alternating, on their two topics, as the evaluator publishes them.
    static func produceBurst(harness: PipelineHarness, devices: Int, perDevice: Int) async throws {
        let producer = try KafkaProducer(
            configuration: KafkaProducerConfiguration(bootstrapServers: TestEnvironment.kafkaBrokers, clientId: "test-burst"),
            logger: harness.logger)
        let encoder = WireJSON.encoder()
        var records: [KafkaRecord] = []
        for device in 0..<devices {
            let deviceId = "burst-\(device)"
            for sequence in 1...perDevice {
                let type: EventType = sequence % 2 == 1 ? .checkin : .checkout
                let checkInId = "\(harness.suffix)-\(device)-\(sequence - (type == .checkout ? 1 : 0))"
                let event = CheckEvent(
                    eventId: "\(harness.suffix)-\(device)-\(sequence)", type: type, projectId: harness.projectId,
                    deviceId: deviceId, checkInId: checkInId,
                    zone: ZoneSummary(id: "zone-cafe", name: "Cafe", description: "", customData: [:]),
                    location: EventLocation(timestamp: Date(), lat: TestTrip.centre.lat, lon: TestTrip.centre.lon),
                    willCheckOut: true, mode: .normal, checkOutTime: type == .checkout ? Date() : nil,
                    reason: type == .checkout ? .exit : nil, sequence: sequence)
                records.append(
                    KafkaRecord(
                        topic: type == .checkin ? harness.topics.checkIns : harness.topics.checkOuts,
                        key: Array(deviceId.utf8), value: Array(try encoder.encode(event))))
            }
        }
        try await withServicesRunning([producer]) { try await producer.sendAll(records) }
    }

    /// Events that arrived after a later event of the same device.
    static func inversions(in payloads: [WebhookPayload]) -> Int {
        var latest: [String: Int] = [:]
        var count = 0
        for payload in payloads {
            let sequence = payload.data.sequence
            if let seen = latest[payload.data.deviceId], sequence < seen { count += 1 }
            latest[payload.data.deviceId] = max(latest[payload.data.deviceId] ?? 0, sequence)
        }
        return count
    }
}
