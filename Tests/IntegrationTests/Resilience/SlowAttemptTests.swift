import BatchProcessing
import Foundation
import Kafka
import Logging
import NIOConcurrencyHelpers
import Testing

/// Attempts that keep timing out while the dependencies answer are the records'
/// fault: their batch is split like poison, the slow record is dead-lettered and its
/// partition moves on.
@Suite struct SlowAttemptTests {
    let logger = Logger.forTests("test.slow-attempts", level: .critical)

    static func messages(_ count: Int) -> [KafkaConsumerMessage] {
        (0..<count).map { KafkaConsumerMessage(topic: "fixes", partition: 0, offset: Int64($0), value: Array("\($0)".utf8)) }
    }

    /// One record of eight makes every attempt that holds it hang; the others are quick.
    @Test func batchHoldingARecordThatAlwaysTimesOutIsSplitAndItsPartitionMoves() async throws {
        let slowOffset: Int64 = 5
        let processed = NIOLockedValueBox<[Int64]>([])
        let deadLettered = NIOLockedValueBox<[(Int64, String)]>([])
        let isolator = PoisonIsolator<[Int64]>(
            attemptTimeout: .milliseconds(500), backoff: Backoff(initial: .milliseconds(1), maximum: .milliseconds(5)),
            health: ProcessingHealth(service: "test", readiness: nil), logger: logger,
            attempt: { records in
                if records.contains(where: { $0.offset == slowOffset }) { try await Task.sleep(for: .seconds(3600)) }
                // As a real attempt does before its commit: one that finished after its time-out
                // was declared (a busy machine) is refused and leaves no effect.
                try AttemptDeadline.claimCommit()
                let offsets = records.map(\.offset)
                processed.withLockedValue { $0 += offsets }
                return offsets
            },
            deadLetter: { message, reason in deadLettered.withLockedValue { $0.append((message.offset, reason)) } },
            unhealthyComponent: { nil })

        let settlement = try await settledWithin(.seconds(30)) { await isolator.settle(Self.messages(8)) }
        let settled = try #require(settlement)
        #expect(deadLettered.withLockedValue { $0.map(\.0) } == [slowOffset])
        #expect(deadLettered.withLockedValue { $0.first?.1.contains("did not finish") } == true)
        #expect(settled.deadLettered == 1)
        // Every other record processed once, in order: the partition moves past the slow one.
        #expect(processed.withLockedValue { $0 } == [0, 1, 2, 3, 4, 6, 7])
        #expect(settled.outcomes.flatMap { $0 } == [0, 1, 2, 3, 4, 6, 7])
    }

    /// While a dependency does not answer, a time-out is that dependency's: nothing is split.
    @Test func attemptsTimingOutWhileADependencyIsAwayAreRetriedWhole() async throws {
        let attempts = NIOLockedValueBox(0)
        let away = NIOLockedValueBox(true)
        let isolator = PoisonIsolator<Int>(
            attemptTimeout: .milliseconds(100), backoff: Backoff(initial: .milliseconds(1), maximum: .milliseconds(5)),
            health: ProcessingHealth(service: "test", readiness: nil), logger: logger,
            attempt: { records in
                let attempt = attempts.withLockedValue { count in
                    count += 1
                    return count
                }
                if attempt < 8 { try await Task.sleep(for: .seconds(3600)) }
                // As a real attempt does: one that finished past its time-out (a busy machine)
                // leaves no effect and is tried again, whole.
                try AttemptDeadline.claimCommit()
                return records.count
            },
            deadLetter: { _, _ in Issue.record("nothing is dead-lettered while the database is away") },
            unhealthyComponent: { away.withLockedValue { $0 } ? "database" : nil })
        let settlement = try await settledWithin(.seconds(30)) { await isolator.settle(Self.messages(8)) }
        // Whole every time: one settlement of all 8 records, never a split, after every timed-out attempt.
        #expect(try #require(settlement).outcomes == [8])
        #expect(attempts.withLockedValue { $0 } >= 8)
    }
}

/// `body`'s result, or a failure once `limit` passed without one.
func settledWithin<T: Sendable>(_ limit: Duration, _ body: @escaping @Sendable () async -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { await body() }
        group.addTask {
            try await Task.sleep(for: limit)
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let result = first else {
            throw TestFailure("not settled within \(limit)")
        }
        return result
    }
}
