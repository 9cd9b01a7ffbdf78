import Foundation
import KafkaTesting
import Logging
import Notifier
import Persistence
import Shared
import Testing

/// Endpoints on one host share its kept-alive connections: however many endpoints a partner
/// has, the notifier opens no more connections to it than it has attempts in flight.
@Suite(.serialized) struct SharedHostConnectionTests {
    let logger = Logger.forTests("test.shared-host")

    @Test func endpointsOfOneHostReuseConnectionsBeyondOneEndpointsShare() async throws {
        let logger = logger
        // Eight endpoints of four slots each can fill the notifier's 32 slots at once.
        let configuration = NotifierConfiguration(
            concurrency: 32, endpointConcurrency: 4, initialRetryDelay: .seconds(60), pollInterval: .milliseconds(100))
        let endpointCount = 8
        let deliveriesPerEndpoint = 100
        let partner = try await ConnectionCountingPartner(habit: .keepAlive)
        let database = Database(configuration: try DatabaseConfiguration(url: try await freshDatabaseURL(logger: logger)), logger: logger)
        let webhooks = WebhookStore(database: database, logger: logger, sealer: PipelineHarness().sealer)
        let dispatcher = WebhookDispatcher(
            configuration: configuration, webhooks: webhooks,
            webhookClient: try GuardedWebhookClient(policy: .local, maximumIdlePerHost: configuration.idleConnectionsPerHost),
            logger: logger)
        try await withServicesRunning([database]) {
            try await Migrator(database: database, logger: logger).migrate()
            try await ProjectStore(database: database, logger: logger).createProject(id: "partner", name: "One partner")
            let secret = WebhookSecret.generate()
            for index in 0..<endpointCount {
                let endpoint = try await webhooks.addEndpoint(
                    projectId: "partner", url: "http://127.0.0.1:\(partner.port)/hooks/\(index)", secrets: [secret])
                try await webhooks.enqueue(try DispatchFairnessTests.deliveries(count: deliveriesPerEndpoint, to: endpoint))
            }
            try await withServicesRunning([dispatcher]) {
                try await waitUntil("every delivery answered", within: .seconds(120)) {
                    partner.answered >= endpointCount * deliveriesPerEndpoint
                }
            }
        }
        #expect(partner.answered == endpointCount * deliveriesPerEndpoint)
        #expect(partner.connections <= configuration.concurrency)
        try await partner.stop()
    }
}
