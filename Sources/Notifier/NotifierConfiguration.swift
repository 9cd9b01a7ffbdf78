import ServiceSupport
import Shared

/// Settings of the webhook notifier.
public struct NotifierConfiguration: Sendable {
    public var groupId: String
    public var topics: Topics
    /// Deliveries sent at the same time (deliveries of one device are always sent one after another).
    public var concurrency: Int
    public var requestTimeout: Duration
    /// Delay before the first retry; each later retry waits twice as long, up to `maximumRetryDelay`.
    public var initialRetryDelay: Duration
    public var maximumRetryDelay: Duration
    /// After this many attempts a delivery is marked failed (it can still be replayed).
    public var maximumAttempts: Int
    /// How long a claimed delivery is reserved for one attempt before another worker may take it.
    public var attemptLease: Duration
    public var pollInterval: Duration
    /// Which endpoint URLs and resolved addresses deliveries may connect to.
    public var webhookURLPolicy: WebhookURLPolicy

    public init(
        groupId: String = "checkin-notifier", topics: Topics = Topics(), concurrency: Int = 16,
        requestTimeout: Duration = .seconds(10), initialRetryDelay: Duration = .seconds(5),
        maximumRetryDelay: Duration = .seconds(3600), maximumAttempts: Int = 12, attemptLease: Duration = .seconds(60),
        pollInterval: Duration = .milliseconds(250), webhookURLPolicy: WebhookURLPolicy = .strict
    ) {
        self.groupId = groupId
        self.topics = topics
        self.concurrency = concurrency
        self.requestTimeout = requestTimeout
        self.initialRetryDelay = initialRetryDelay
        self.maximumRetryDelay = maximumRetryDelay
        self.maximumAttempts = maximumAttempts
        self.attemptLease = attemptLease
        self.pollInterval = pollInterval
        self.webhookURLPolicy = webhookURLPolicy
    }

    public init(environment: EnvironmentReader, topics: Topics) throws {
        self.init(
            groupId: environment.string("CHECKIN_NOTIFIER_GROUP", default: "checkin-notifier"), topics: topics,
            concurrency: try environment.int("CHECKIN_WEBHOOK_CONCURRENCY", default: 16, range: 1...1024),
            requestTimeout: try environment.duration("CHECKIN_WEBHOOK_TIMEOUT", default: .seconds(10)),
            initialRetryDelay: try environment.duration("CHECKIN_WEBHOOK_RETRY_DELAY", default: .seconds(5)),
            maximumRetryDelay: try environment.duration("CHECKIN_WEBHOOK_MAX_RETRY_DELAY", default: .seconds(3600)),
            maximumAttempts: try environment.int("CHECKIN_WEBHOOK_MAX_ATTEMPTS", default: 12, range: 1...100),
            webhookURLPolicy: try WebhookURLPolicy(environment: environment))
    }

    /// The wait before attempt `attempt + 1`, after `attempt` failed.
    func retryDelay(afterAttempt attempt: Int) -> Duration {
        var delay = initialRetryDelay
        for _ in 1..<max(attempt, 1) {
            delay = delay * 2
            if delay >= maximumRetryDelay { return maximumRetryDelay }
        }
        return min(delay, maximumRetryDelay)
    }
}
