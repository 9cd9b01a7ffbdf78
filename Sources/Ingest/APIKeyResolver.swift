import Foundation
import HTTPTypes
import Hummingbird
import Metrics
import NIOConcurrencyHelpers
import Persistence
import ServiceSupport

/// Maps an API key to its project, caching answers briefly so that the hot path
/// does not query Postgres on every request.
///
/// Known keys and unknown ones are cached apart, each bounded: requests with made-up
/// keys fill only the unknown side, so they can never push a valid key out and send
/// its every request to Postgres. Failed authentications are limited per client
/// (`AuthFailureLimiter`); a client over its limit is answered 429 without a lookup,
/// except for a key already known to be valid.
public final class APIKeyResolver: Sendable {
    struct Caches: Sendable {
        var known: ExpiringCache<String>
        var unknown: ExpiringCache<Void>
    }

    let projects: ProjectStore
    let timeToLive: Duration
    let failures: AuthFailureLimiter
    private let caches: NIOLockedValueBox<Caches>
    let unauthorized = Counter(label: "checkin_ingest_auth_failures_total", dimensions: [("result", "unauthorized")])
    let limited = Counter(label: "checkin_ingest_auth_failures_total", dimensions: [("result", "limited")])

    public init(
        projects: ProjectStore, timeToLive: Duration = .seconds(30), capacity: Int = 10_000,
        failuresPerMinute: Int = IngestConfiguration.defaultAuthFailuresPerMinute
    ) {
        self.projects = projects
        self.timeToLive = timeToLive
        self.failures = AuthFailureLimiter(failuresPerMinute: failuresPerMinute)
        self.caches = NIOLockedValueBox(
            Caches(
                known: ExpiringCache(capacity: capacity, whenFull: .dropSoonestExpiring),
                unknown: ExpiringCache(capacity: capacity, whenFull: .dropAll)))
    }

    /// The key from `Authorization: Bearer …` or `X-API-Key`. Two different keys in one
    /// request would leave it to chance which project answers: a 400 naming both headers.
    static func key(in request: Request) throws -> String? {
        var bearer: String?
        if let authorization = request.headers[.authorization], authorization.lowercased().hasPrefix("bearer ") {
            bearer = String(authorization.dropFirst(7)).trimmingCharacters(in: .whitespaces)
        }
        let header = HTTPField.Name("X-API-Key").flatMap { request.headers[$0] }
        if let bearer, let header, bearer != header {
            throw Problem.invalid(
                "the request carries two different API keys; send one",
                parameters: [
                    .init(name: "Authorization", reason: "differs from X-API-Key"),
                    .init(name: "X-API-Key", reason: "differs from Authorization"),
                ])
        }
        return bearer ?? header
    }

    /// The project of the request's key of this kind, or a 401 problem (429 when the
    /// client failed too often).
    func project(for request: Request, context: IngestRequestContext, kind: ProjectStore.KeyKind) async throws -> String {
        let client = ClientAddress(context.remoteAddress)
        let now = ContinuousClock.now
        let key = try Self.key(in: request) ?? ""
        let cacheKey = kind.rawValue + ":" + key
        if !key.isEmpty, let projectId = caches.withLockedValue({ $0.known.value(for: cacheKey, now: now) }) {
            return projectId
        }
        if let wait = failures.wait(for: client, now: now) {
            limited.increment()
            throw Problem.tooManyAuthenticationFailures(retryAfter: wait)
        }
        guard !key.isEmpty else {
            throw refusal(of: client, now: now, "send the \(kind.rawValue) API key as 'Authorization: Bearer <key>'")
        }
        let notAKey = "the API key is not a \(kind.rawValue) key of any project"
        if caches.withLockedValue({ $0.unknown.value(for: cacheKey, now: now) }) != nil {
            throw refusal(of: client, now: now, notAKey)
        }
        let projectId = try await projects.project(forKey: key, kind: kind)
        caches.withLockedValue { caches in
            if let projectId {
                caches.known.insert(projectId, for: cacheKey, expires: now + timeToLive, now: now)
            } else {
                caches.unknown.insert((), for: cacheKey, expires: now + timeToLive, now: now)
            }
        }
        guard let projectId else { throw refusal(of: client, now: now, notAKey) }
        return projectId
    }

    private func refusal(of client: ClientAddress, now: ContinuousClock.Instant, _ detail: String) -> Problem {
        failures.recordFailure(of: client, now: now)
        unauthorized.increment()
        return Problem.unauthorized(detail)
    }
}

/// Answers kept until they expire, at most `capacity` of them. When full, expired
/// answers go first; then, as `whenFull` says, the one closest to expiry or all of them.
struct ExpiringCache<Value>: Sendable where Value: Sendable {
    enum Eviction {
        case dropSoonestExpiring
        case dropAll
    }

    let capacity: Int
    let whenFull: Eviction
    private var entries: [String: (value: Value, expires: ContinuousClock.Instant)] = [:]

    init(capacity: Int, whenFull: Eviction) {
        self.capacity = capacity
        self.whenFull = whenFull
    }

    var count: Int { entries.count }

    func value(for key: String, now: ContinuousClock.Instant) -> Value? {
        guard let entry = entries[key], entry.expires > now else { return nil }
        return entry.value
    }

    mutating func insert(_ value: Value, for key: String, expires: ContinuousClock.Instant, now: ContinuousClock.Instant) {
        if entries[key] == nil && entries.count >= capacity {
            entries = entries.filter { $0.value.expires > now }
            if entries.count >= capacity {
                switch whenFull {
                case .dropSoonestExpiring:
                    if let soonest = entries.min(by: { $0.value.expires < $1.value.expires })?.key { entries[soonest] = nil }
                case .dropAll:
                    entries.removeAll()
                }
            }
        }
        entries[key] = (value, expires)
    }
}
