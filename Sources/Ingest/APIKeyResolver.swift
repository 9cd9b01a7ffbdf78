import Crypto
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
///
/// A known key is cached until its own expiry if that comes sooner (a rotated key stops on
/// time). A key revoked or rotated through this process is dropped from its cache at once;
/// other processes notice within `timeToLive` (30 s).
package final class APIKeyResolver: Sendable {
    struct Caches: Sendable {
        var known: ExpiringCache<KeyMatch>
        /// What a key that does not match is told: no key at all, or a key of the other kind.
        var unknown: ExpiringCache<String>
    }

    let projects: ProjectStore
    let timeToLive: Duration
    let failures: AuthFailureLimiter
    /// The key of the operator routes (projects); nil: those routes are off.
    let operatorKeyDigest: [UInt8]?
    /// Collects the keys in use, written to Postgres at most once a minute.
    let usage: KeyUsageRecorder
    private let caches: NIOLockedValueBox<Caches>
    let unauthorized = Counter(label: "checkin_ingest_auth_failures_total", dimensions: [("result", "unauthorized")])
    let limited = Counter(label: "checkin_ingest_auth_failures_total", dimensions: [("result", "limited")])

    package init(
        projects: ProjectStore, timeToLive: Duration = .seconds(30), capacity: Int = 10_000,
        failuresPerMinute: Int = IngestConfiguration.defaultAuthFailuresPerMinute, operatorKey: String? = nil,
        usage: KeyUsageRecorder? = nil
    ) {
        self.projects = projects
        self.operatorKeyDigest = operatorKey.map(Self.digest)
        self.usage = usage ?? KeyUsageRecorder(projects: projects)
        self.timeToLive = timeToLive
        self.failures = AuthFailureLimiter(failuresPerMinute: failuresPerMinute)
        self.caches = NIOLockedValueBox(
            Caches(
                known: ExpiringCache(capacity: capacity, whenFull: .dropSoonestExpiring),
                unknown: ExpiringCache(capacity: capacity, whenFull: .dropAll)))
    }

    /// The key from `Authorization: Bearer …` or `X-API-Key`. Two different keys in one
    /// request would leave it to chance which project answers: a 400 naming both headers.
    /// So are two `Authorization` (or two `X-API-Key`) headers with different keys.
    static func key(in request: Request) throws -> String? {
        let bearers = Set(
            request.headers[values: .authorization].compactMap { authorization -> String? in
                guard authorization.lowercased().hasPrefix("bearer ") else { return nil }
                return String(authorization.dropFirst(7)).trimmingCharacters(in: .whitespaces)
            })
        let headers = Set(HTTPField.Name("X-API-Key").map { request.headers[values: $0] } ?? [])
        let repeated = [("Authorization", bearers), ("X-API-Key", headers)].filter { $0.1.count > 1 }
        guard repeated.isEmpty else {
            throw Problem.invalid(
                "the request carries two different API keys; send one",
                parameters: repeated.map { .init(name: $0.0, reason: "is given twice with different keys") })
        }
        let (bearer, header) = (bearers.first, headers.first)
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
        try await match(for: request, context: context, kind: kind).projectId
    }

    /// The working key of this kind the request carries, or a 401 problem (429 when the
    /// client failed too often).
    func match(for request: Request, context: IngestRequestContext, kind: ProjectStore.KeyKind) async throws -> KeyMatch {
        let client = ClientAddress(context.remoteAddress)
        let now = ContinuousClock.now
        let key = try Self.key(in: request) ?? ""
        let cacheKey = kind.rawValue + ":" + key
        if !key.isEmpty, let match = caches.withLockedValue({ $0.known.value(for: cacheKey, now: now) }) {
            usage.note(match.keyId)
            return match
        }
        if let wait = failures.wait(for: client, now: now) {
            limited.increment()
            throw Problem.tooManyAuthenticationFailures(retryAfter: wait)
        }
        guard !key.isEmpty else {
            throw refusal(of: client, now: now, "send the \(kind.rawValue) API key as 'Authorization: Bearer <key>'")
        }
        if let refused = caches.withLockedValue({ $0.unknown.value(for: cacheKey, now: now) }) {
            throw refusal(of: client, now: now, refused)
        }
        guard let match = try await projects.match(forKey: key, kind: kind) else {
            // A key of the other kind is named as such, the commonest mistake (and nothing the
            // caller does not already hold); the answer is cached like any refusal.
            var refused = "the API key is not a \(kind.rawValue) key of any project"
            if let other = ProjectStore.KeyKind.allCases.first(where: { $0 != kind }),
                try await projects.match(forKey: key, kind: other) != nil
            {
                refused = Self.wrongKind(other, for: kind)
            }
            caches.withLockedValue { $0.unknown.insert(refused, for: cacheKey, expires: now + timeToLive, now: now) }
            throw refusal(of: client, now: now, refused)
        }
        var expires = now + timeToLive
        if let expiresAt = match.expiresAt {
            expires = min(expires, now + .milliseconds(Int64(expiresAt.timeIntervalSinceNow * 1000)))
        }
        caches.withLockedValue { $0.known.insert(match, for: cacheKey, expires: expires, now: now) }
        usage.note(match.keyId)
        return match
    }

    /// What a key of kind `given` is told where a `wanted` key is asked for.
    static func wrongKind(_ given: ProjectStore.KeyKind, for wanted: ProjectStore.KeyKind) -> String {
        switch wanted {
        case .device: "a \(given.rawValue) key cannot send fixes: send one of the project's device keys"
        case .management: "a \(given.rawValue) key cannot manage the project: send one of its management keys"
        }
    }

    /// Drops a revoked or rotated key from this process's cache, so that it stops working
    /// here at once (other processes notice when their cached answer expires).
    func forget(keyId: String) {
        caches.withLockedValue { $0.known.removeAll { $0.keyId == keyId } }
    }

    /// Passes a request that carries the operator key; a 404 when the operator routes are
    /// off, a 401 (counted as a failed authentication) for any other key.
    func requireOperator(_ request: Request, context: IngestRequestContext) throws {
        guard let operatorKeyDigest else {
            throw Problem(
                status: .notFound, type: "operator-routes-off", title: "The operator routes are off",
                detail: "set CHECKIN_OPERATOR_KEY to manage projects through the API")
        }
        let key = try Self.key(in: request) ?? ""
        // Digests compared, so that the time taken says nothing about the key's characters.
        if !key.isEmpty, Self.digest(key) == operatorKeyDigest { return }
        let client = ClientAddress(context.remoteAddress)
        let now = ContinuousClock.now
        if let wait = failures.wait(for: client, now: now) {
            limited.increment()
            throw Problem.tooManyAuthenticationFailures(retryAfter: wait)
        }
        throw refusal(of: client, now: now, "send the operator key (CHECKIN_OPERATOR_KEY) as 'Authorization: Bearer <key>'")
    }

    /// Whether the request carries the operator key (the operator routes being on).
    func carriesOperatorKey(_ request: Request) -> Bool {
        guard let operatorKeyDigest, let key = try? Self.key(in: request), !key.isEmpty else { return false }
        return Self.digest(key) == operatorKeyDigest
    }

    static func digest(_ key: String) -> [UInt8] {
        Array(SHA256.hash(data: Data(key.utf8)))
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

    mutating func removeAll(where shouldBeRemoved: (Value) -> Bool) {
        entries = entries.filter { !shouldBeRemoved($0.value.value) }
    }
}
