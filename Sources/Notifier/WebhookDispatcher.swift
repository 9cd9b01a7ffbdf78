import AsyncHTTPClient
import Dispatch
import Foundation
import Logging
import Metrics
import NIOCore
import NIOHTTP1
import Persistence
import ServiceLifecycle
import Shared

/// Sends queued deliveries as signed webhooks (Standard Webhooks), retrying
/// failures with exponential back-off. A delivery is marked delivered only on a
/// 2xx answer; until then it stays queued in Postgres, so nothing is lost to a
/// crash or a partner's outage.
public final class WebhookDispatcher: Service, Sendable {
    let configuration: NotifierConfiguration
    let webhooks: WebhookStore
    /// Connects only to addresses the URL policy allows (see `GuardedWebhookClient`).
    let webhookClient: GuardedWebhookClient
    let logger: Logger
    private let wakeUps: AsyncStream<Void>
    private let wakeUpContinuation: AsyncStream<Void>.Continuation

    let deliveredCounter = Counter(label: "checkin_notifier_deliveries_total", dimensions: [("result", "delivered")])
    let retryCounter = Counter(label: "checkin_notifier_deliveries_total", dimensions: [("result", "retry")])
    let failedCounter = Counter(label: "checkin_notifier_deliveries_total", dimensions: [("result", "failed")])
    let latency = Metrics.Timer(label: "checkin_notifier_delivery_seconds")

    init(configuration: NotifierConfiguration, webhooks: WebhookStore, webhookClient: GuardedWebhookClient, logger: Logger) {
        self.configuration = configuration
        self.webhooks = webhooks
        self.webhookClient = webhookClient
        self.logger = logger
        (wakeUps, wakeUpContinuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Asks for a look at the queue now rather than at the next poll.
    func wake() {
        wakeUpContinuation.yield()
    }

    public func run() async throws {
        await withDiscardingTaskGroup { group in
            group.addTask { [configuration] in
                // Turns the poll interval into wake-ups, so one loop below serves both.
                while !Task.isCancelled {
                    try? await Task.sleep(for: configuration.pollInterval)
                    self.wake()
                }
            }
            for await _ in wakeUps.cancelOnGracefulShutdown() {
                do {
                    while try await dispatchDue() == configuration.concurrency * 4 {}
                } catch {
                    logger.error("webhook dispatch failed", metadata: ["error": "\(String(reflecting: error))"])
                }
            }
            group.cancelAll()
        }
    }

    /// Claims and sends one round of due deliveries; returns how many it claimed.
    func dispatchDue() async throws -> Int {
        let claimed = try await webhooks.claimDue(limit: configuration.concurrency * 4, lease: configuration.attemptLease)
        guard !claimed.isEmpty else { return 0 }
        // Per device in the order things happened (a check-in before its check-out), devices side by side.
        let byDevice = Dictionary(grouping: claimed, by: \.deviceId).values.map {
            $0.sorted { ($0.eventTime, $0.id) < ($1.eventTime, $1.id) }
        }
        await withTaskGroup(of: Void.self) { group in
            var running = 0
            for attempts in byDevice {
                if running >= configuration.concurrency {
                    await group.next()
                    running -= 1
                }
                group.addTask {
                    for attempt in attempts { await self.deliver(attempt) }
                }
                running += 1
            }
        }
        return claimed.count
    }

    func deliver(_ attempt: DeliveryAttempt) async {
        let started = DispatchTime.now()
        let body = Array(attempt.payload.utf8)
        let timestamp = Int(Date().timeIntervalSince1970)
        let secrets = attempt.secrets.compactMap { try? WebhookSecret($0) }
        var request = HTTPClientRequest(url: attempt.url)
        request.method = .POST
        request.headers.add(name: "content-type", value: "application/json")
        request.headers.add(name: "user-agent", value: "checkin-webhooks/1")
        request.headers.add(name: WebhookSignature.idHeader, value: attempt.eventId)
        request.headers.add(name: WebhookSignature.timestampHeader, value: String(timestamp))
        request.headers.add(
            name: WebhookSignature.signatureHeader,
            value: WebhookSignature.header(id: attempt.eventId, timestamp: timestamp, body: body, secrets: secrets))
        request.body = .bytes(ByteBuffer(bytes: body))

        var statusCode: Int?
        var failure: String
        do {
            let response = try await webhookClient.execute(request, timeout: .init(configuration.requestTimeout))
            statusCode = Int(response.status.code)
            _ = try? await response.body.collect(upTo: 64 * 1024)
            if (200..<300).contains(response.status.code) {
                latency.recordInterval(since: started)
                deliveredCounter.increment()
                await record { try await self.webhooks.markDelivered(id: attempt.id, statusCode: Int(response.status.code)) }
                return
            }
            failure = "HTTP \(response.status.code)"
        } catch {
            failure = String(describing: error)
        }
        let giveUp = attempt.attempt >= configuration.maximumAttempts
        let retryAt = giveUp ? nil : Date().addingTimeInterval(seconds(configuration.retryDelay(afterAttempt: attempt.attempt)))
        (giveUp ? failedCounter : retryCounter).increment()
        logger.warning(
            "webhook delivery failed",
            metadata: [
                "deliveryId": "\(attempt.id)", "eventId": "\(attempt.eventId)", "attempt": "\(attempt.attempt)",
                "error": "\(failure)", "willRetry": "\(!giveUp)",
            ])
        await record {
            try await self.webhooks.markAttemptFailed(id: attempt.id, statusCode: statusCode, error: failure, retryAt: retryAt)
        }
    }

    /// A result that cannot be recorded leaves the lease to expire, and the delivery is retried.
    private func record(_ update: () async throws -> Void) async {
        do {
            try await update()
        } catch {
            logger.error("could not record a delivery result", metadata: ["error": "\(error)"])
        }
    }

    private func seconds(_ duration: Duration) -> TimeInterval {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}

extension TimeAmount {
    init(_ duration: Duration) {
        self = .nanoseconds(duration.components.seconds * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000)
    }
}
