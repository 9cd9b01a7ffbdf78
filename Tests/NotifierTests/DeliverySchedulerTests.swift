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
        var scheduler = DeliveryScheduler(concurrency: 4, endpointConcurrency: 2)
        for id in 0..<10 { scheduler.add(attempt(Int64(id), endpoint: "slow", project: "a")) }
        for id in 10..<12 { scheduler.add(attempt(Int64(id), endpoint: "fast", project: "b")) }
        var started: [String] = []
        while let next = scheduler.next() { started.append(next.endpointId) }
        #expect(started.sorted() == ["fast", "fast", "slow", "slow"])
        #expect(scheduler.saturatedEndpoints == ["slow"])
        scheduler.finished(endpointId: "fast")
        // The free slot cannot go to the slow endpoint, which has its two.
        #expect(scheduler.next() == nil)
        scheduler.finished(endpointId: "slow")
        #expect(scheduler.next()?.endpointId == "slow")
    }

    @Test func projectsTakeTurns() {
        var scheduler = DeliveryScheduler(concurrency: 100, endpointConcurrency: 100)
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
        var scheduler = DeliveryScheduler(concurrency: 1, endpointConcurrency: 1)
        for id in 0..<3 { scheduler.add(attempt(Int64(id), endpoint: "gone", project: "a")) }
        #expect(scheduler.next()?.id == 0)
        #expect(scheduler.removeQueued(endpointId: "gone").map(\.id) == [1, 2])
        scheduler.finished(endpointId: "gone")
        #expect(scheduler.held == 0)
    }
}
