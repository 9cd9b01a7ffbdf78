import Foundation
import Logging
import Persistence
import PostgresNIO
import Shared
import Testing

extension DeliveryClaimTests {
    /// A pending delivery (queued, in flight or retrying) is not replayed: it goes out anyway,
    /// and a replay would clear the lease its attempt on the wire holds, so that it could be
    /// claimed and sent a second time. The answer names it, and nothing is queued again.
    @Test func aPendingDeliveryIsNotReplayed() async throws {
        try await withQueue { queue in
            try await queue.webhooks.enqueue([queue.delivery(1), queue.delivery(1, device: "e")])
            let out = try await queue.claim()
            #expect(out.count == 2)
            try await queue.finish(out.filter { $0.deviceId == "e" }, .failed)
            let inFlight = try #require(out.first { $0.deviceId == "d" })
            let failed = try #require(out.first { $0.deviceId == "e" })

            let replayed = try await queue.webhooks.replay(deliveryIds: [inFlight.id, failed.id], projectId: queue.projectId)
            #expect(replayed.ids.isEmpty && replayed.pending == [inFlight.id], "\(replayed)")
            // The lease stands: no claim takes the delivery in flight again, nor the failed one.
            #expect(try await queue.claim().isEmpty)
            let detail = try #require(try await queue.webhooks.delivery(id: inFlight.id, projectId: queue.projectId))
            #expect(detail.waitingFor == .attemptInFlight, "\(String(describing: detail.waitingFor))")
        }
    }

    /// Replaying a device's failed deliveries together makes its first one due and the rest
    /// wait behind it (at 'infinity', out of the due order), one at a time as each is done.
    /// Replaying an earlier one while a later one is due puts the later one back behind it.
    @Test func aReplayMakesOnlyTheDevicesHeadDue() async throws {
        try await withQueue { queue in
            try await queue.webhooks.enqueue((1...3).map { queue.delivery($0) })
            let failed = try await queue.failEachInTurn()
            #expect(failed.map(\.sequence) == [1, 2, 3])
            let replayed = try await queue.webhooks.replay(deliveryIds: failed.map(\.id), projectId: queue.projectId)
            #expect(replayed.ids.count == 3)
            #expect(try await queue.dueCount() == 1, "only the device's head may be due")
            #expect(try await queue.failEachInTurn().map(\.sequence) == [1, 2, 3])

            // The first replayed alone while the later two are pending, the second of them due.
            try await queue.webhooks.replay(deliveryIds: [failed[1].id, failed[2].id], projectId: queue.projectId)
            #expect(try await queue.dueCount() == 1)
            try await queue.webhooks.replay(deliveryIds: [failed[0].id], projectId: queue.projectId)
            #expect(try await queue.dueCount() == 1, "the later replayed ones wait again behind the first")
            #expect(try await queue.claim().map(\.sequence) == [1])
        }
    }
}

extension DeliveryClaimTests.Queue {
    /// Claims the project's deliveries and records each attempt as failed for good, one at a
    /// time (a result may claim the device's next one itself), until none is due: those
    /// attempted, in the order they went.
    func failEachInTurn() async throws -> [ClaimedDelivery] {
        var attempted: [ClaimedDelivery] = []
        var out = try await claim()
        while !out.isEmpty {
            #expect(out.count == 1, "one at a time: \(out.map(\.sequence))")
            attempted += out
            let next = try await finish(out, .failed)
            out = next.isEmpty ? try await claim() : next
        }
        return attempted
    }

    /// The project's pending deliveries in the due order (a time to go, not 'infinity').
    func dueCount() async throws -> Int {
        var count = 0
        for try await value in try await database.client.query(
            """
            SELECT count(*)::int FROM deliveries
             WHERE project_id = \(projectId) AND status = 'pending' AND next_attempt_at < 'infinity'
            """, logger: Logger(label: "test.claims")
        ).decode(Int.self) {
            count = value
        }
        return count
    }
}
