import ServiceSupport
import Shared

/// Settings of the webhook notifier.
package struct NotifierConfiguration: Sendable {
    package var groupId: String
    /// How long a rebalance of the consumer group may last before the group is taken to be
    /// wedged by its coordinator and its members move to its next incarnation (see
    /// `GroupRecovery`); zero: never.
    package var rebalanceLimit: Duration = .seconds(60)
    package var topics: Topics
    /// Attempts in flight at once, across all endpoints.
    package var concurrency: Int
    /// Attempts in flight at once to one endpoint (also its HTTP connections), so that no
    /// endpoint can take every slot and slow the others.
    package var endpointConcurrency: Int
    package var requestTimeout: Duration
    /// Delay before the first retry; each later retry waits twice as long, up to
    /// `maximumRetryDelay`, less a random part of up to half (jitter).
    package var initialRetryDelay: Duration
    /// Also the cap on a `Retry-After` an endpoint asks for.
    package var maximumRetryDelay: Duration
    /// After this many attempts a delivery is marked failed (it can still be replayed).
    package var maximumAttempts: Int
    /// How long a claimed delivery is reserved for this notifier; renewed while its attempt
    /// runs, so a notifier that dies leaves its work to the others within one lease.
    package var attemptLease: Duration
    /// How long a device's event waits for the device's previous one to be queued (it comes
    /// from the other event topic) before it goes without it.
    package var gapHold: Duration
    package var pollInterval: Duration
    /// Claim a device's next delivery in the statement that records its predecessor's
    /// result, instead of releasing it for a later claim (one row update fewer per
    /// delivery). Off only to measure what it saves.
    package var claimsSuccessorsWithResults: Bool
    /// Claim the deliveries that may go at once in the transaction that queues them, instead
    /// of leaving them to the next claim (no claim query, no wait for one). Off only to
    /// measure what it saves.
    package var claimsWhenQueued: Bool
    /// Which endpoint URLs and resolved addresses deliveries may connect to.
    package var webhookURLPolicy: WebhookURLPolicy
    /// Delivered deliveries (and their attempt log) are deleted this long after delivery;
    /// zero keeps them for ever. Pending and failed ones are always kept.
    package var deliveryRetention: Duration
    /// Most attempt results written in one statement. While this many wait to be written,
    /// no more deliveries are claimed: their leases are renewed until they are written.
    package var resultBatch: Int = 2000

    package init(
        groupId: String = "checkin-notifier", topics: Topics = Topics(), concurrency: Int = 64, endpointConcurrency: Int = 16,
        requestTimeout: Duration = .seconds(10), initialRetryDelay: Duration = .seconds(5),
        maximumRetryDelay: Duration = .seconds(3600), maximumAttempts: Int = 12, attemptLease: Duration = .seconds(10),
        gapHold: Duration = .seconds(60), pollInterval: Duration = .milliseconds(250),
        webhookURLPolicy: WebhookURLPolicy = .strict, deliveryRetention: Duration = .seconds(7 * 86_400),
        claimsSuccessorsWithResults: Bool = true, claimsWhenQueued: Bool = true
    ) {
        self.groupId = groupId
        self.topics = topics
        self.concurrency = concurrency
        self.endpointConcurrency = min(endpointConcurrency, concurrency)
        self.requestTimeout = requestTimeout
        self.initialRetryDelay = initialRetryDelay
        self.maximumRetryDelay = maximumRetryDelay
        self.maximumAttempts = maximumAttempts
        self.attemptLease = attemptLease
        self.gapHold = gapHold
        self.pollInterval = pollInterval
        self.webhookURLPolicy = webhookURLPolicy
        self.deliveryRetention = deliveryRetention
        self.claimsSuccessorsWithResults = claimsSuccessorsWithResults
        self.claimsWhenQueued = claimsWhenQueued
    }

    package init(environment: EnvironmentReader, topics: Topics) throws {
        self.init(
            groupId: environment.string("CHECKIN_NOTIFIER_GROUP", default: "checkin-notifier"), topics: topics,
            concurrency: try environment.int("CHECKIN_WEBHOOK_CONCURRENCY", default: 64, range: 1...4096),
            endpointConcurrency: try environment.int("CHECKIN_WEBHOOK_ENDPOINT_CONCURRENCY", default: 16, range: 1...1024),
            requestTimeout: try environment.duration("CHECKIN_WEBHOOK_TIMEOUT", default: .seconds(10), minimum: .milliseconds(100)),
            initialRetryDelay: try environment.duration("CHECKIN_WEBHOOK_RETRY_DELAY", default: .seconds(5)),
            maximumRetryDelay: try environment.duration("CHECKIN_WEBHOOK_MAX_RETRY_DELAY", default: .seconds(3600)),
            maximumAttempts: try environment.int("CHECKIN_WEBHOOK_MAX_ATTEMPTS", default: 12, range: 1...100),
            attemptLease: try environment.duration("CHECKIN_WEBHOOK_LEASE", default: .seconds(10), minimum: .milliseconds(100)),
            gapHold: try environment.duration("CHECKIN_WEBHOOK_GAP_HOLD", default: .seconds(60)),
            webhookURLPolicy: try WebhookURLPolicy(environment: environment),
            deliveryRetention: try environment.duration("CHECKIN_DELIVERY_RETENTION", default: .seconds(7 * 86_400)),
            claimsWhenQueued: try environment.bool("CHECKIN_WEBHOOK_CLAIM_WHEN_QUEUED", default: true))
        rebalanceLimit = try environment.duration("CHECKIN_KAFKA_REBALANCE_LIMIT", default: .seconds(60))
    }

    /// How many idle connections the webhook client keeps open to one host: as many as attempts
    /// may be in flight, not one endpoint's share. Several endpoints may share a host (one
    /// partner's endpoints), each with its own share in flight; kept to one share, the
    /// connections beyond it were closed after each answer and opened again for the next
    /// request, a new connection every few deliveries.
    package var idleConnectionsPerHost: Int { concurrency }

    /// The back-off before attempt `attempt + 1`, after `attempt` failed, without jitter.
    func retryDelay(afterAttempt attempt: Int) -> Duration {
        var delay = initialRetryDelay
        for _ in 1..<max(attempt, 1) {
            delay = delay * 2
            if delay >= maximumRetryDelay { return maximumRetryDelay }
        }
        return min(delay, maximumRetryDelay)
    }

    /// How long all of a delivery's attempts take at most: a delivery queued for a disabled
    /// endpoint longer than this has run out of retries.
    var retryWindow: Duration {
        var total = Duration.zero
        for attempt in 1..<max(maximumAttempts, 1) { total += retryDelay(afterAttempt: attempt) + requestTimeout }
        return total + requestTimeout
    }
}
