import Foundation
import Persistence
import PostgresNIO
import Shared
import Testing

/// `checkin deliveries show` answers what an operator asks about one delivery: what it
/// sends, where, what it waits for, and every attempt, told apart across replays.
@Suite struct DeliveryShowTests {
    let harness = PipelineHarness()
    var environment: [String: String] { ["CHECKIN_SECRET_KEY": harness.secretKey.base64] }

    func show(_ id: Int64, _ options: [String] = []) async throws -> CommandOutcome {
        let shown = try await CommandOutcome.run(
            ["deliveries", "show", "--project", harness.projectId, String(id)] + options, environment: environment)
        #expect(shown.exitCode == 0, "\(shown.standardError)")
        return shown
    }

    /// A pending delivery goes by itself: `deliveries replay` refuses it, naming it, as the API
    /// answers 409 `delivery-pending`, and queues nothing.
    @Test func aPendingDeliveryIsNotReplayed() async throws {
        try await harness.prepare()
        let id = try await withMigratedDatabase(url: TestEnvironment.databaseURL, logger: harness.logger) { database in
            try await queueToADisabledEndpoint(1, named: "pending-\(harness.suffix)", harness: harness, database: database)
            let webhooks = WebhookStore(database: database, logger: harness.logger, sealer: harness.sealer)
            let page = try await webhooks.deliveries(projectId: harness.projectId, filter: nil, before: nil, limit: 1)
            return try #require(page.deliveries.first?.id)
        }
        let replayed = try await CommandOutcome.run(
            ["deliveries", "replay", "--project", harness.projectId, String(id)], environment: environment)
        #expect(replayed.exitCode != 0)
        #expect(
            replayed.standardError.contains("still pending") && replayed.standardError.contains(DeliveryIdentifier.text(id)),
            "\(replayed.standardError)")
    }

    /// A replay counts the attempts from 1 again, so the log shows them in rounds, each
    /// headed by when it began: the two "attempt 1" are told apart, in the order made.
    @Test func aReplayedDeliveryShowsItsAttemptsInRoundsAndTheReplay() async throws {
        try await harness.prepare()
        let id = try await withMigratedDatabase(url: TestEnvironment.databaseURL, logger: harness.logger) { database in
            try await queueToADisabledEndpoint(1, named: "shown-\(harness.suffix)", harness: harness, database: database)
            let webhooks = WebhookStore(database: database, logger: harness.logger, sealer: harness.sealer)
            let page = try await webhooks.deliveries(projectId: harness.projectId, filter: nil, before: nil, limit: 1)
            let id = try #require(page.deliveries.first?.id)
            try await attempt(id, 500, .retry(after: .seconds(3600)), database: database, webhooks: webhooks)
            try await attempt(id, 502, .failed, database: database, webhooks: webhooks)
            return id
        }
        let replayed = try await CommandOutcome.run(
            ["deliveries", "replay", "--project", harness.projectId, String(id)], environment: environment)
        #expect(replayed.exitCode == 0, "\(replayed.standardError)")
        try await withMigratedDatabase(url: TestEnvironment.databaseURL, logger: harness.logger) { database in
            let webhooks = WebhookStore(database: database, logger: harness.logger, sealer: harness.sealer)
            try await attempt(id, 503, .retry(after: .seconds(3600)), database: database, webhooks: webhooks)
        }

        let lines = try await show(id).standardOutput.split(separator: "\n").map(String.init)
        let log = Array(lines.drop { $0 != "attempts:" }.dropFirst())
        let expected = [
            "round 1: queued at", "attempt 1", "attempt 2", "round 2: replayed at", "attempt 1",
        ]
        #expect(log.count == expected.count, "\(lines)")
        for (line, start) in zip(log, expected) {
            #expect(line.trimmingCharacters(in: .whitespaces).hasPrefix(start), "\(lines)")
        }
        #expect(log.count == 5 && log[1].hasSuffix("HTTP 500") && log[2].hasSuffix("HTTP 502") && log[4].hasSuffix("HTTP 503"), "\(log)")
        // Latencies to a tenth of a millisecond, as the API gives them.
        #expect(log.count == 5 && log[1].contains(" 12.3 ms "), "\(log)")
        // Each line's time: the replay falls between the rounds' attempts.
        let times = log.compactMap { line in line.split(separator: " ").compactMap { RFC3339.parse(String($0)) }.first }
        #expect(times.count == 5 && times == times.sorted(), "\(log)")
    }

    /// What a pending delivery waits for: its time, the device's earlier delivery, or its
    /// endpoint; with the endpoint, the event, the device and the exact payload.
    @Test func aPendingDeliveryShowsWhatItWaitsForAndItsPayload() async throws {
        try await harness.prepare()
        let device = "waiting-\(harness.suffix)"
        let payload = #"{"type":"checkin","data":{"deviceId":"\#(device)","sequence":2}}"#
        // Sequence 2 without its predecessor waits out the gap hold (an hour), and sequence 3
        // waits behind it: neither is due, so no notifier of another test sends them.
        let (endpoint, ids) = try await withMigratedDatabase(url: TestEnvironment.databaseURL, logger: harness.logger) { database in
            let webhooks = WebhookStore(database: database, logger: harness.logger, sealer: harness.sealer)
            let endpoint = try await webhooks.addEndpoint(
                projectId: harness.projectId, url: "http://127.0.0.1:9/\(device)", secrets: [WebhookSecret.generate()])
            let deliveries = [2, 3].map { sequence in
                NewDelivery(
                    endpointId: endpoint.id, projectId: harness.projectId, eventId: "\(device)-\(sequence)", eventType: "checkin",
                    deviceId: device, eventTime: Date(), sequence: sequence, payload: sequence == 2 ? payload : "{}")
            }
            #expect(try await webhooks.enqueue(deliveries, gapHold: .seconds(3600)) == 2)
            let page = try await webhooks.deliveries(projectId: harness.projectId, filter: nil, before: nil, limit: 2)
            return (endpoint, page.deliveries.map(\.id).sorted())
        }
        let first = try await show(ids[0]).standardOutput
        for part in [
            "delivery \(DeliveryIdentifier.text(ids[0])): pending", "checkin \(device)-2", "\(device), sequence 2",
            "\(endpoint.id) \(endpoint.url)",
            "payload    \(payload)", "attempts:\n  none yet",
        ] {
            #expect(first.contains(part), "\(part) in \(first)")
        }
        let next = try #require(first.split(separator: "\n").first, "\(first)")
        #expect(next.hasPrefix("delivery \(DeliveryIdentifier.text(ids[0])): pending, next attempt at "), "\(first)")
        let due = try #require(RFC3339.parse(String(next.split(separator: " ").last ?? "")), "\(next)")
        #expect(due > Date().addingTimeInterval(3000) && due < Date().addingTimeInterval(3700), "\(next)")

        let second = try await show(ids[1]).standardOutput
        #expect(
            second.hasPrefix("delivery \(DeliveryIdentifier.text(ids[1])): pending, waiting for the device's earlier delivery"), "\(second)"
        )

        // The payload alone is the exact body, for jq or a signature check.
        #expect(try await show(ids[0], ["--payload"]).standardOutput == payload)

        try await withMigratedDatabase(url: TestEnvironment.databaseURL, logger: harness.logger) { database in
            let webhooks = WebhookStore(database: database, logger: harness.logger, sealer: harness.sealer)
            _ = try await webhooks.disableEndpoint(id: endpoint.id, projectId: harness.projectId, reason: "test")
        }
        let disabled = try await show(ids[0]).standardOutput
        #expect(disabled.hasPrefix("delivery \(DeliveryIdentifier.text(ids[0])): pending, endpoint disabled"), "\(disabled)")
        #expect(!disabled.contains("next attempt at"), "\(disabled)")
    }

    /// One attempt of the delivery as the notifier makes it: claimed (its attempt count
    /// raised, leased), then its result recorded, 12.3456 ms after it began.
    func attempt(
        _ id: Int64, _ status: Int, _ outcome: DeliveryResult.Outcome, database: Database, webhooks: WebhookStore
    ) async throws {
        let rows = try await database.client.query(
            """
            UPDATE deliveries SET attempts = attempts + 1, lease_owner = 'show-test', leased_until = now() + interval '1 minute'
             WHERE id = \(id) RETURNING attempts
            """, logger: harness.logger)
        var attempt = 0
        for try await count in rows.decode(Int.self) { attempt = count }
        try await webhooks.record(
            [
                DeliveryResult(
                    deliveryId: id, attempt: attempt, startedAt: Date(), latency: .nanoseconds(12_345_600), statusCode: status,
                    error: "HTTP \(status)", outcome: outcome)
            ], owner: "show-test")
    }
}
