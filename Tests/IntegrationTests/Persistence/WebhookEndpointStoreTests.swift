import Foundation
import Logging
import Notifier
import Persistence
import PostgresNIO
import Shared
import Testing

/// Endpoint secrets at rest, their rotation and migration, and endpoint state, against
/// a real Postgres: a fresh database per test, as claiming deliveries is global.
@Suite struct WebhookEndpointStoreTests {
    let logger = Logger.forTests("test.endpoints")
    let sealer = SecretSealer(key: .generate())

    /// Runs `body` on a database of its own, migrated up to `migrations`, with a project `p`.
    func withFreshDatabase<T: Sendable>(
        migrations: [Migration] = Migration.all, _ body: @Sendable (Database) async throws -> T
    ) async throws -> T {
        let logger = logger
        return try await withMigratedDatabase(
            url: try await freshDatabaseURL(logger: logger), migrations: migrations, logger: logger
        ) { database in
            try await database.client.query("INSERT INTO projects (id, name) VALUES ('p', 'P')", logger: logger)
            return try await body(database)
        }
    }

    func storedSecrets(_ database: Database, endpointId: String) async throws -> [String] {
        let rows = try await database.client.query(
            "SELECT sealed FROM webhook_secrets WHERE endpoint_id = \(endpointId) ORDER BY id", logger: logger)
        var result: [String] = []
        for try await value in rows.decode(String.self) { result.append(value) }
        return result
    }

    func enqueueOne(_ webhooks: WebhookStore, endpointId: String) async throws {
        try await webhooks.enqueue([
            NewDelivery(
                endpointId: endpointId, projectId: "p", eventId: UUID().uuidString, eventType: "checkin", deviceId: UUID().uuidString,
                eventTime: Date(), sequence: 1, payload: "{}")
        ])
    }

    /// Device `d`'s event number `sequence` for `endpoint`.
    func delivery(_ sequence: Int, to endpoint: WebhookEndpoint) -> NewDelivery {
        NewDelivery(
            endpointId: endpoint.id, projectId: "p", eventId: "e\(sequence)", eventType: "checkin", deviceId: "d",
            eventTime: Date(), sequence: sequence, payload: "{}")
    }

    @Test func secretsAreSealedAtRestAndOpenedForSigning() async throws {
        let (logger, sealer) = (logger, sealer)
        let secret = WebhookSecret.generate()
        try await withFreshDatabase { database in
            let webhooks = WebhookStore(database: database, logger: logger, sealer: sealer)
            let endpoint = try await webhooks.addEndpoint(projectId: "p", url: "https://hooks.example.com/", secrets: [secret])
            let stored = try await storedSecrets(database, endpointId: endpoint.id)
            #expect(stored.count == 1)
            #expect(stored.allSatisfy { $0.hasPrefix("sealed:v1:") && !$0.contains(secret.dropFirst(6)) })

            try await enqueueOne(webhooks, endpointId: endpoint.id)
            let claimed = try await webhooks.claimDue(limit: 10, perEndpoint: 10, owner: "test", lease: .seconds(60), gapHold: .seconds(60))
            #expect(DeliveryOpener.open(claimed, with: sealer).opened.map(\.secrets) == [[secret]])

            // Another key cannot open them: the claim fails rather than sending unverifiable webhooks.
            let otherKey = WebhookStore(database: database, logger: logger, sealer: SecretSealer(key: .generate()))
            await #expect(throws: SecretSealingError.self) { try await otherKey.sealStoredSecrets() }
        }
    }

    /// An endpoint stored before encryption at rest, in the old `secrets` column, keeps
    /// signing through the migration and is sealed at the next start.
    @Test func plaintextSecretsOfEarlierVersionsAreMigratedAndSealed() async throws {
        let (logger, sealer) = (logger, sealer)
        // 16 bytes: accepted then, too short for a new secret now, still signing until rotated.
        let legacy = "whsec_" + Data(repeating: 42, count: 16).base64EncodedString()
        try await withFreshDatabase(migrations: Migration.all.filter { $0.version == 1 }) { database in
            try await database.client.query(
                "INSERT INTO webhook_endpoints (id, project_id, url, secrets) VALUES ('we_old', 'p', 'https://old.example.com/', \([legacy]))",
                logger: logger)
            try await Migrator(database: database, logger: logger).migrate()
            let webhooks = WebhookStore(database: database, logger: logger, sealer: sealer)
            #expect(try await storedSecrets(database, endpointId: "we_old") == [legacy])

            #expect(try await webhooks.sealStoredSecrets() == 1)
            let sealed = try await storedSecrets(database, endpointId: "we_old")
            #expect(sealed.count == 1 && sealed[0].hasPrefix("sealed:v1:") && !sealed[0].contains(legacy.dropFirst(6)))
            #expect(try await webhooks.sealStoredSecrets() == 0)

            try await enqueueOne(webhooks, endpointId: "we_old")
            #expect(
                DeliveryOpener.open(
                    try await webhooks.claimDue(limit: 10, perEndpoint: 10, owner: "test", lease: .seconds(60), gapHold: .seconds(60)),
                    with: sealer
                ).opened.map(\.secrets) == [[legacy]])
            #expect(try await webhooks.endpoints(projectId: "p").map(\.url) == ["https://old.example.com/"])
        }
    }

    @Test func aRotatedSecretSignsBesideThePreviousOneUntilTheWindowEnds() async throws {
        let (logger, sealer) = (logger, sealer)
        let first = WebhookSecret.generate()
        let second = WebhookSecret.generate()
        let third = WebhookSecret.generate()
        try await withFreshDatabase { database in
            let webhooks = WebhookStore(database: database, logger: logger, sealer: sealer)
            let endpoint = try await webhooks.addEndpoint(projectId: "p", url: "https://hooks.example.com/", secrets: [first])
            #expect(endpoint.previousSecretExpiresAt == nil)

            let rotation = try #require(
                try await webhooks.rotateSecret(id: endpoint.id, projectId: "p", newSecret: second, window: .seconds(3600)))
            #expect(rotation.secret == second)
            let expires = try #require(rotation.endpoint.previousSecretExpiresAt)
            #expect(abs(expires.timeIntervalSinceNow - 3600) < 60)
            try await enqueueOne(webhooks, endpointId: endpoint.id)
            #expect(
                DeliveryOpener.open(
                    try await webhooks.claimDue(limit: 10, perEndpoint: 10, owner: "test", lease: .seconds(60), gapHold: .seconds(60)),
                    with: sealer
                ).opened.map(\.secrets) == [[second, first]])

            // A window of zero drops the previous secret at once; the first keeps its own end.
            _ = try await webhooks.rotateSecret(id: endpoint.id, projectId: "p", newSecret: third, window: .zero)
            try await enqueueOne(webhooks, endpointId: endpoint.id)
            #expect(
                DeliveryOpener.open(
                    try await webhooks.claimDue(limit: 10, perEndpoint: 10, owner: "test", lease: .seconds(60), gapHold: .seconds(60)),
                    with: sealer
                ).opened.map(\.secrets) == [[third, first]])

            #expect(try await webhooks.rotateSecret(id: endpoint.id, projectId: "another", newSecret: third, window: .zero) == nil)
            #expect(try await webhooks.rotateSecret(id: "we_none", projectId: "p", newSecret: third, window: .zero) == nil)
        }
    }

    @Test func endpointsAreDisabledWithAReasonAndEnabledAgain() async throws {
        let (logger, sealer) = (logger, sealer)
        try await withFreshDatabase { database in
            let webhooks = WebhookStore(database: database, logger: logger, sealer: sealer)
            let endpoint = try await webhooks.addEndpoint(
                projectId: "p", url: "https://hooks.example.com/", secrets: [WebhookSecret.generate()])
            #expect(endpoint.enabled && endpoint.disabledReason == nil && endpoint.disabledAt == nil)

            // As the notifier does on a partner's 410: whatever the project.
            let gone = try #require(try await webhooks.disableEndpoint(id: endpoint.id, reason: "HTTP 410 Gone"))
            #expect(!gone.enabled && gone.disabledReason == "HTTP 410 Gone")
            let disabledAt = try #require(gone.disabledAt)
            // Disabling again keeps the first reason and time.
            let again = try await webhooks.disableEndpoint(id: endpoint.id, projectId: "p", reason: "operator")
            #expect(again?.disabledReason == "HTTP 410 Gone" && again?.disabledAt == disabledAt)
            #expect(try await webhooks.endpoints(projectId: "p").map(\.enabled) == [false])
            #expect(try await webhooks.disableEndpoint(id: endpoint.id, projectId: "another", reason: "x") == nil)

            let enabled = try #require(try await webhooks.enableEndpoint(id: endpoint.id, projectId: "p"))
            #expect(enabled.enabled && enabled.disabledReason == nil && enabled.disabledAt == nil)
            #expect(try await webhooks.enableEndpoint(id: "we_none", projectId: "p") == nil)
        }
    }

    /// Enabling another project's endpoint is a miss before anything of that endpoint is
    /// touched: its waiting deliveries are not let go on behalf of another tenant.
    @Test func enablingAnotherProjectsEndpointLetsNoneOfItsDeliveriesGo() async throws {
        let (logger, sealer) = (logger, sealer)
        try await withFreshDatabase { database in
            try await database.client.query("INSERT INTO projects (id, name) VALUES ('q', 'Q')", logger: logger)
            let webhooks = WebhookStore(database: database, logger: logger, sealer: sealer)
            let endpoint = try await webhooks.addEndpoint(
                projectId: "p", url: "https://hooks.example.com/", secrets: [WebhookSecret.generate()])
            try await enqueueOne(webhooks, endpointId: endpoint.id)
            // A first delivery left waiting, as one queued while the one ahead was being recorded.
            try await database.client.query("UPDATE deliveries SET next_attempt_at = 'infinity'", logger: logger)
            func waiting() async throws -> Int {
                let rows = try await database.client.query(
                    "SELECT count(*)::int FROM deliveries WHERE next_attempt_at = 'infinity'", logger: logger)
                var count = 0
                for try await value in rows.decode(Int.self) { count = value }
                return count
            }

            #expect(try await webhooks.enableEndpoint(id: endpoint.id, projectId: "q") == nil)
            #expect(try await waiting() == 1)
            #expect(try await webhooks.enableEndpoint(id: endpoint.id, projectId: "p")?.enabled == true)
            #expect(try await waiting() == 0)
        }
    }

    /// Deliveries of a disabled endpoint are not due ('infinity'), so that claims never read
    /// them however many queue up; enabling brings them back, and the notifier's periodic
    /// pass mends rows that raced with either.
    @Test func deliveriesOfADisabledEndpointStayOutOfClaimsUntilItIsEnabled() async throws {
        let (logger, sealer) = (logger, sealer)
        try await withFreshDatabase { database in
            let webhooks = WebhookStore(database: database, logger: logger, sealer: sealer)
            let endpoint = try await webhooks.addEndpoint(
                projectId: "p", url: "https://hooks.example.com/", secrets: [WebhookSecret.generate()])
            func claim() async throws -> Int {
                let claimed = try await webhooks.claimDue(
                    limit: 100, perEndpoint: 100, owner: "test", lease: .seconds(60), gapHold: .seconds(60))
                try await webhooks.releaseLeases(ids: claimed.map(\.id), owner: "test")
                return claimed.count
            }
            func parked() async throws -> Int {
                let rows = try await database.client.query(
                    "SELECT count(*)::int FROM deliveries WHERE next_attempt_at = 'infinity'", logger: logger)
                var count = 0
                for try await value in rows.decode(Int.self) { count = value }
                return count
            }
            try await enqueueOne(webhooks, endpointId: endpoint.id)
            _ = try await webhooks.disableEndpoint(id: endpoint.id, reason: "HTTP 410 Gone")
            try await enqueueOne(webhooks, endpointId: endpoint.id)
            #expect(try await parked() == 2)
            #expect(try await claim() == 0)

            _ = try await webhooks.enableEndpoint(id: endpoint.id, projectId: "p")
            #expect(try await parked() == 0)
            #expect(try await claim() == 2)

            // A retry recorded after the endpoint was disabled made one due again; the pass parks it.
            _ = try await webhooks.disableEndpoint(id: endpoint.id, reason: "operator")
            try await database.client.query(
                "UPDATE deliveries SET next_attempt_at = now() WHERE id = (SELECT min(id) FROM deliveries)", logger: logger)
            #expect(try await webhooks.parkDisabledDeliveries() == 1)
            #expect(try await parked() == 2)
            // Enabled behind the store's back: the pass brings both back.
            try await database.client.query("UPDATE webhook_endpoints SET enabled = true", logger: logger)
            #expect(try await webhooks.mendEveryWaitingHead() == 2)
            #expect(try await claim() == 2)
        }
    }

    /// Only a device's first pending delivery is due; the next one becomes due when it is
    /// done, and a first delivery left waiting (queued while the one ahead was being
    /// recorded) is let go by the notifier's periodic pass.
    @Test func onlyEachDevicesFirstDeliveryIsDue() async throws {
        let (logger, sealer) = (logger, sealer)
        try await withFreshDatabase { database in
            let webhooks = WebhookStore(database: database, logger: logger, sealer: sealer)
            let endpoint = try await webhooks.addEndpoint(
                projectId: "p", url: "https://hooks.example.com/", secrets: [WebhookSecret.generate()])
            func due() async throws -> [Int] {
                let rows = try await database.client.query(
                    "SELECT sequence::int FROM deliveries WHERE status = 'pending' AND next_attempt_at <= now() ORDER BY 1",
                    logger: logger)
                var sequences: [Int] = []
                for try await sequence in rows.decode(Int.self) { sequences.append(sequence) }
                return sequences
            }
            try await webhooks.enqueue([delivery(2, to: endpoint), delivery(1, to: endpoint)])
            try await webhooks.enqueue([delivery(3, to: endpoint)])
            #expect(try await due() == [1])

            let first = try await webhooks.claimDue(limit: 10, perEndpoint: 10, owner: "test", lease: .seconds(60), gapHold: .seconds(60))
            #expect(first.map(\.sequence) == [1])
            try await webhooks.record(
                [
                    DeliveryResult(
                        deliveryId: first[0].id, attempt: 1, startedAt: Date(), latency: .milliseconds(5), statusCode: 204,
                        error: nil, outcome: .delivered)
                ], owner: "test")
            #expect(try await due() == [2])

            // As if the delivery of 2 had been recorded without seeing 3, queued meanwhile.
            try await database.client.query(
                "UPDATE deliveries SET status = 'delivered' WHERE sequence = 2", logger: logger)
            #expect(try await due() == [])
            #expect(try await webhooks.mendEveryWaitingHead() == 1)
            #expect(try await due() == [3])
        }
    }

    /// An endpoint whose secret was sealed under another key cannot be signed for: the
    /// notifier records its delivery as a failed attempt and it waits, and the rest of the claim goes.
    @Test func aDeliveryThatCannotBeSignedDoesNotStopTheClaim() async throws {
        let (logger, sealer) = (logger, sealer)
        try await withFreshDatabase { database in
            let webhooks = WebhookStore(database: database, logger: logger, sealer: sealer)
            let otherKey = WebhookStore(database: database, logger: logger, sealer: SecretSealer(key: .generate()))
            let sealedElsewhere = try await otherKey.addEndpoint(
                projectId: "p", url: "https://old.example.com/", secrets: [WebhookSecret.generate()])
            let healthy = try await webhooks.addEndpoint(
                projectId: "p", url: "https://hooks.example.com/", secrets: [WebhookSecret.generate()])
            try await enqueueOne(webhooks, endpointId: sealedElsewhere.id)
            try await enqueueOne(webhooks, endpointId: healthy.id)

            let opener = DeliveryOpener(sealer: sealer, webhooks: webhooks, owner: "test", logger: logger)
            let claimed = await opener.open(
                try await webhooks.claimDue(limit: 10, perEndpoint: 10, owner: "test", lease: .seconds(60), gapHold: .seconds(60)))
            #expect(claimed.map(\.endpointId) == [healthy.id])
            let rows = try await database.client.query(
                """
                SELECT d.attempts, d.lease_owner IS NULL, d.next_attempt_at > now() + interval '200 seconds',
                       (SELECT count(*)::int FROM delivery_attempts a WHERE a.delivery_id = d.id), COALESCE(d.last_error, '')
                  FROM deliveries d WHERE d.endpoint_id = \(sealedElsewhere.id)
                """, logger: logger)
            var seen = 0
            for try await (attempts, released, waits, logged, error) in rows.decode((Int, Bool, Bool, Int, String).self) {
                seen += 1
                #expect(attempts == 1 && released && waits && logged == 1)
                #expect(error.contains("not sent"), "\(error)")
            }
            #expect(seen == 1)
        }
    }

    /// While a device's delivery waits to retry, its later deliveries to the endpoint (queued
    /// before or after) are not due before it, so claims meanwhile do not read them.
    @Test func aDevicesLaterDeliveriesWaitWithItsRetry() async throws {
        let (logger, sealer) = (logger, sealer)
        try await withFreshDatabase { database in
            let webhooks = WebhookStore(database: database, logger: logger, sealer: sealer)
            let endpoint = try await webhooks.addEndpoint(
                projectId: "p", url: "https://hooks.example.com/", secrets: [WebhookSecret.generate()])
            try await webhooks.enqueue([delivery(1, to: endpoint), delivery(2, to: endpoint)])
            let first = try await webhooks.claimDue(limit: 10, perEndpoint: 10, owner: "test", lease: .seconds(60), gapHold: .seconds(60))
            #expect(first.map(\.sequence) == [1])
            try await webhooks.record(
                [
                    DeliveryResult(
                        deliveryId: first[0].id, attempt: 1, startedAt: Date(), latency: .milliseconds(5), statusCode: 500,
                        error: "HTTP 500", outcome: .retry(after: .seconds(3600)))
                ], owner: "test")
            try await webhooks.enqueue([delivery(3, to: endpoint)])
            let rows = try await database.client.query(
                """
                SELECT sequence::int, (next_attempt_at > now() + interval '3500 seconds') FROM deliveries ORDER BY sequence
                """, logger: logger)
            var waiting: [Int: Bool] = [:]
            for try await (sequence, later) in rows.decode((Int, Bool).self) { waiting[sequence] = later }
            #expect(waiting == [1: true, 2: true, 3: true])
            #expect(
                try await webhooks.claimDue(limit: 10, perEndpoint: 10, owner: "test", lease: .seconds(60), gapHold: .seconds(60))
                    .isEmpty)
        }
    }

    @Test func productionNeedsAKeyWhileDevAndDemoKeepALocalOne() async throws {
        let logger = logger
        try await withFreshDatabase { database in
            let keys = SecretKeyStore(database: database, logger: logger)
            await #expect(throws: SecretKeyMissingError.self) { try await keys.sealer(configured: nil, fallback: .required) }
            await #expect(throws: SecretKeyMissingError.self) { try await keys.sealer(configured: nil, fallback: .existingLocal) }
            let configured = SecretEncryptionKey.generate()
            #expect(try await keys.sealer(configured: configured, fallback: .required).key == configured)

            let local = try await keys.sealer(configured: nil, fallback: .generateLocal).key
            #expect(try await keys.sealer(configured: nil, fallback: .generateLocal).key == local)
            #expect(try await keys.sealer(configured: nil, fallback: .existingLocal).key == local)
        }
    }
}
