import Foundation
import Hummingbird
import Logging
import ServiceLifecycle
import Shared
import Testing

/// Killing any one service with SIGKILL in the middle of a trip and starting it
/// again loses neither a fix nor a webhook.
@Suite(.serialized) struct ServiceRestartTests {
    enum Victim: String, CaseIterable, Sendable {
        case ingest, evaluator, notifier
    }

    @Test(arguments: Victim.allCases)
    func killedServiceLosesNothing(_ victim: Victim) async throws {
        let harness = PipelineHarness()
        try await harness.prepare()
        let logDirectory = try harness.makeLogDirectory()
        try await withRegisteredReceiver(harness) { received in

            let ingestPort = try freePort()
            let shared = harness.processEnvironment
            let services: [Victim: ServiceProcess] = Dictionary(
                uniqueKeysWithValues: try Victim.allCases.map { service in
                    var environment = shared
                    environment["CHECKIN_HTTP_PORT"] = String(service == .ingest ? ingestPort : try freePort())
                    return (
                        service,
                        ServiceProcess(
                            name: service.rawValue, arguments: [service.rawValue], environment: environment,
                            logDirectory: logDirectory)
                    )
                })
            try await withProcessesStopped(Array(services.values)) {
                for service in services.values { try service.start() }
                try await waitForHealth(port: ingestPort)

                let trip = TestTrip(projectId: harness.projectId)
                let url = "http://127.0.0.1:\(ingestPort)/v1/fixes"
                #expect(try await post(try trip.batch(0..<5), to: url, key: harness.deviceKey).status == 202)

                let killed = services[victim]!
                killed.kill()
                try killed.start()
                if victim == .ingest { try await waitForHealth(port: ingestPort) }

                #expect(try await post(try trip.batch(5..<9), to: url, key: harness.deviceKey).status == 202)
                do {
                    try await received.wait(timeout: .seconds(120)) { trip.isComplete($0) }
                } catch {
                    for service in services.values { print("----- \(service.name) log -----\n\(service.log.suffix(4000))") }
                    throw error
                }
                let mine = await received.payloads.filter { $0.data.deviceId == trip.deviceId }
                // At-least-once: a redelivery repeats an event id, never invents a new event.
                #expect(Set(mine.map(\.data.eventId)).count == 2)
                #expect(await received.rejected == 0)
            }
        }
    }
}
