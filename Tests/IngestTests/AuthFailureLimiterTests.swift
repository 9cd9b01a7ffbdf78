import NIOCore
import Testing

@testable import Ingest

/// The limit on failed authentications, per client, on a clock the test moves: a client may
/// fail up to its limit, then waits until one failure has drained; others are not held up.
@Suite struct AuthFailureLimiterTests {
    let start = ContinuousClock.now

    func client(_ address: String) throws -> ClientAddress {
        ClientAddress(try SocketAddress(ipAddress: address, port: 40_000))
    }

    @Test func aClientAtItsLimitWaitsUntilOneFailureHasDrained() throws {
        let limiter = AuthFailureLimiter(failuresPerMinute: 6)
        let guessing = try client("192.0.2.1")
        for _ in 0..<5 { limiter.recordFailure(of: guessing, now: start) }
        #expect(limiter.wait(for: guessing, now: start) == nil, "five failures of six a minute")
        limiter.recordFailure(of: guessing, now: start)
        // Six a minute drain one every ten seconds.
        #expect(limiter.wait(for: guessing, now: start) == .seconds(10))
        #expect(limiter.wait(for: guessing, now: start + .seconds(10)) == nil)
    }

    @Test func anotherClientIsNotHeldUp() throws {
        let limiter = AuthFailureLimiter(failuresPerMinute: 2)
        let (guessing, other) = (try client("192.0.2.1"), try client("192.0.2.2"))
        for _ in 0..<4 { limiter.recordFailure(of: guessing, now: start) }
        #expect(limiter.wait(for: guessing, now: start) != nil)
        #expect(limiter.wait(for: other, now: start) == nil)
    }

    @Test func noLimitWhenNoneIsConfigured() throws {
        let limiter = AuthFailureLimiter(failuresPerMinute: 0)
        let guessing = try client("192.0.2.1")
        for _ in 0..<1_000 { limiter.recordFailure(of: guessing, now: start) }
        #expect(limiter.wait(for: guessing, now: start) == nil)
    }

    /// One host usually holds a whole IPv6 /64, and a dual-stack socket shows an IPv4 client
    /// as an IPv4-mapped address: both are counted as the client they are.
    @Test func anIPv6NetworkIsOneClientAndAMappedIPv4AddressIsItsIPv4Client() throws {
        #expect(try client("2001:db8::1") == client("2001:db8::ffff:2"))
        #expect(try client("2001:db8::1") != client("2001:db8:0:1::1"))
        #expect(try client("::ffff:192.0.2.1") == client("192.0.2.1"))
        #expect(try client("::ffff:192.0.2.1") != client("192.0.2.2"))
    }
}
