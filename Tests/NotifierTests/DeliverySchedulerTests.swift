import Persistence
import Testing

@testable import Notifier

/// Slots are shared so that no endpoint can take them all.
@Suite struct DeliverySchedulerTests {
    func attempt(_ id: Int64, endpoint: String, project: String) -> DeliveryAttempt {
        DeliveryAttempt(
            id: id, endpointId: endpoint, projectId: project, url: "http://x", secrets: [], eventId: "e\(id)",
            deviceId: "d\(id)", sequence: 1, payload: "{}", attempt: 1)
    }

    @Test func anEndpointGetsItsShareAndNoMore() {
        var scheduler = DeliveryScheduler(concurrency: 4, endpointConcurrency: 2, capacity: 32)
        for id in 0..<10 { scheduler.add(attempt(Int64(id), endpoint: "slow", project: "a")) }
        for id in 10..<12 { scheduler.add(attempt(Int64(id), endpoint: "fast", project: "b")) }
        var started: [String] = []
        while let next = scheduler.next() { started.append(next.endpointId) }
        #expect(started.sorted() == ["fast", "fast", "slow", "slow"])
        #expect(scheduler.saturatedEndpoints(at: .now) == ["slow"])
        scheduler.finished(endpointId: "fast")
        // The free slot cannot go to the slow endpoint, which has its two.
        #expect(scheduler.next() == nil)
        scheduler.finished(endpointId: "slow")
        #expect(scheduler.next()?.endpointId == "slow")
    }

    /// An endpoint may hold as many as it answered in the last second (at least twice its
    /// slots, at most the notifier's capacity less that), so a burst for a partner that keeps up is
    /// taken as it comes while one that answers nothing keeps its small share.
    @Test func anEndpointThatAnswersFastMayHoldMore() {
        let start = ContinuousClock.now
        var scheduler = DeliveryScheduler(concurrency: 64, endpointConcurrency: 4, capacity: 512)
        for id in 0..<40 { scheduler.add(attempt(Int64(id), endpoint: "fast", project: "a"), at: start) }
        while let next = scheduler.next(at: start) { scheduler.finished(endpointId: next.endpointId, at: start) }
        #expect(scheduler.allowance(of: "fast", at: start) == 40)
        #expect(scheduler.allowance(of: "silent", at: start) == 8)
        for id in 100..<130 { scheduler.add(attempt(Int64(id), endpoint: "fast", project: "a"), at: start) }
        for id in 200..<230 { scheduler.add(attempt(Int64(id), endpoint: "silent", project: "b"), at: start) }
        #expect(scheduler.saturatedEndpoints(at: start) == ["silent"])
        // Never more than the notifier's capacity less another's share: 128 - 8.
        var busy = DeliveryScheduler(concurrency: 64, endpointConcurrency: 4, capacity: 128)
        for id in 300..<500 { busy.add(attempt(Int64(id), endpoint: "faster", project: "c"), at: start) }
        while let next = busy.next(at: start) { busy.finished(endpointId: next.endpointId, at: start) }
        #expect(busy.allowance(of: "faster", at: start) == 120)
        // Two seconds without an answer: back to twice its slots.
        #expect(scheduler.allowance(of: "fast", at: start + .seconds(2)) == 8)
    }

    /// What an endpoint took while it answered fast, it gives back once it stops: the queued
    /// beyond its allowance, latest first, once it has started none for a second. A burst
    /// that is still going out is kept.
    @Test func anEndpointThatStopsGivesBackItsSurplus() {
        let start = ContinuousClock.now
        var scheduler = DeliveryScheduler(concurrency: 64, endpointConcurrency: 4, capacity: 512)
        for id in 0..<40 { scheduler.add(attempt(Int64(id), endpoint: "partner", project: "a"), at: start) }
        while let next = scheduler.next(at: start) { scheduler.finished(endpointId: next.endpointId, at: start) }
        for id in 100..<130 { scheduler.add(attempt(Int64(id), endpoint: "partner", project: "a"), at: start) }
        // It stops answering: four in flight, 26 queued.
        for _ in 0..<4 { _ = scheduler.next(at: start) }
        #expect(scheduler.held == 30)
        #expect(scheduler.takeSurplus(at: start + .milliseconds(500)).isEmpty)
        // Within its allowance (40 answered in the last second) it keeps them.
        #expect(scheduler.takeSurplus(at: start + .milliseconds(1500)).isEmpty)
        let surplus = scheduler.takeSurplus(at: start + .milliseconds(2500))
        #expect(surplus.map(\.id) == (108..<130).reversed().map(Int64.init))
        #expect(scheduler.held == 8)
        #expect(scheduler.queued == 4)
        #expect(scheduler.next(at: start + .milliseconds(2500)) == nil)

        // A fresh burst of 50 to a partner not heard from yet: more than its allowance, kept
        // while it goes out.
        var fresh = DeliveryScheduler(concurrency: 64, endpointConcurrency: 4, capacity: 512)
        for id in 0..<50 { fresh.add(attempt(Int64(id), endpoint: "new", project: "a"), at: start) }
        for _ in 0..<4 { _ = fresh.next(at: start) }
        #expect(fresh.takeSurplus(at: start + .milliseconds(900)).isEmpty)
        fresh.finished(endpointId: "new", at: start + .milliseconds(900))
        _ = fresh.next(at: start + .milliseconds(900))
        #expect(fresh.takeSurplus(at: start + .milliseconds(1800)).isEmpty)
        #expect(fresh.held == 49)
    }

    @Test func projectsTakeTurns() {
        var scheduler = DeliveryScheduler(concurrency: 100, endpointConcurrency: 100, capacity: 800)
        for id in 0..<3 { scheduler.add(attempt(Int64(id), endpoint: "a1", project: "a")) }
        for id in 3..<6 { scheduler.add(attempt(Int64(id), endpoint: "a2", project: "a")) }
        for id in 6..<9 { scheduler.add(attempt(Int64(id), endpoint: "b1", project: "b")) }
        var order: [String] = []
        while let next = scheduler.next() { order.append(next.projectId) }
        // Project b gets every other turn although project a has twice its endpoints.
        #expect(order.prefix(4) == ["a", "b", "a", "b"])
        #expect(scheduler.inFlight == 9)
        #expect(scheduler.removeAllQueued().isEmpty)
    }

    @Test func aDisabledEndpointsQueueIsTakenBack() {
        var scheduler = DeliveryScheduler(concurrency: 1, endpointConcurrency: 1, capacity: 8)
        for id in 0..<3 { scheduler.add(attempt(Int64(id), endpoint: "gone", project: "a")) }
        #expect(scheduler.next()?.id == 0)
        #expect(scheduler.removeQueued(endpointId: "gone").map(\.id) == [1, 2])
        scheduler.finished(endpointId: "gone")
        #expect(scheduler.held == 0)
    }
}
