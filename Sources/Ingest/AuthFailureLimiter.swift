import NIOConcurrencyHelpers
import NIOCore
import Shared

/// Limits failed authentications per client: each client has a bucket of
/// `failuresPerMinute` failures that refills evenly over a minute, and a client whose
/// bucket is empty is answered 429 until it refills. Keys are long random strings, so
/// guessing is hopeless anyway; what this stops is one client making Postgres look up
/// key after unknown key. Successful requests take nothing from the bucket.
final class AuthFailureLimiter: Sendable {
    struct Bucket {
        var failures: Double
        var updated: ContinuousClock.Instant
    }

    /// 0: no limit.
    let failuresPerMinute: Int
    /// Clients remembered at most; when full, those whose bucket refilled go first.
    let capacity: Int
    private let buckets = NIOLockedValueBox<[ClientAddress: Bucket]>([:])

    init(failuresPerMinute: Int, capacity: Int = 100_000) {
        self.failuresPerMinute = failuresPerMinute
        self.capacity = capacity
    }

    /// How long the client must wait before its next attempt, or nil if it may try now.
    func wait(for client: ClientAddress, now: ContinuousClock.Instant = .now) -> Duration? {
        guard failuresPerMinute > 0 else { return nil }
        return buckets.withLockedValue { buckets in
            guard let bucket = buckets[client] else { return nil }
            let failures = drained(bucket, now: now)
            guard failures > Double(failuresPerMinute) - 1 else { return nil }
            // Until one failure has drained away.
            let seconds = (failures - Double(failuresPerMinute) + 1) * 60 / Double(failuresPerMinute)
            return .seconds(max(1, Int(seconds.rounded(.up))))
        }
    }

    func recordFailure(of client: ClientAddress, now: ContinuousClock.Instant = .now) {
        guard failuresPerMinute > 0 else { return }
        buckets.withLockedValue { buckets in
            if buckets[client] == nil && buckets.count >= capacity {
                buckets = buckets.filter { drained($0.value, now: now) > 0 }
                if buckets.count >= capacity { buckets.removeAll() }
            }
            let failures = buckets[client].map { drained($0, now: now) } ?? 0
            buckets[client] = Bucket(failures: failures + 1, updated: now)
        }
    }

    /// The bucket's failures after what drained since it was last updated.
    private func drained(_ bucket: Bucket, now: ContinuousClock.Instant) -> Double {
        max(0, bucket.failures - (now - bucket.updated).seconds * Double(failuresPerMinute) / 60)
    }
}

/// Who a request is counted against: its IPv4 address, or the /64 network of its IPv6
/// address (one host usually holds a whole /64, so single addresses cost it nothing).
struct ClientAddress: Hashable, Sendable {
    let address: IPAddress?

    init(_ socketAddress: SocketAddress?) {
        switch socketAddress.flatMap({ $0.ipAddress }).flatMap({ IPAddress(host: $0) }) {
        case .v6(let bytes) where bytes.prefix(10).allSatisfy({ $0 == 0 }) && bytes[10] == 0xff && bytes[11] == 0xff:
            // IPv4-mapped: the IPv4 client behind a dual-stack socket.
            address = .v4(bytes[12...].reduce(0) { $0 << 8 | UInt32($1) })
        case .v6(let bytes): address = .v6(Array(bytes.prefix(8)) + Array(repeating: 0, count: 8))
        case let other: address = other
        }
    }
}
