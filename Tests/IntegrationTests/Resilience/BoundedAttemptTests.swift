import BatchProcessing
import Foundation
import Logging
import NIOConcurrencyHelpers
import Persistence
import PostgresNIO
import Testing

/// An attempt whose query waits on a lock is bounded by its time-out, and what it did
/// does not commit once the lock is let go.
@Suite(.serialized) struct BoundedAttemptTests {
    let logger = Logger.forTests("test.bounded-attempts", level: .critical)

    @Test func queryBlockedOnALockIsBoundedAndDoesNotCommitLater() async throws {
        let logger = logger
        try await withMigratedDatabase(url: try await freshDatabaseURL(logger: logger), logger: logger) { database in
            try await database.client.query("CREATE TABLE attempt_probe (id int PRIMARY KEY, value int NOT NULL)", logger: logger)
            try await database.client.query("INSERT INTO attempt_probe VALUES (1, 0)", logger: logger)

            let (lockHeld, holding) = AsyncStream.makeStream(of: Void.self)
            let holder = Task {
                try await database.withTransaction { connection in
                    try await connection.query("SELECT 1 FROM attempt_probe WHERE id = 1 FOR UPDATE", logger: logger)
                    holding.yield()
                    // Not cancellable: the lock is held for eight seconds whatever happens.
                    try await connection.query("SELECT pg_sleep(8)", logger: logger)
                }
            }
            for await _ in lockHeld { break }

            let started = ContinuousClock.now
            await #expect(throws: AttemptTimedOut.self) {
                try await withTimeout(.seconds(1)) {
                    try await database.withTransaction { connection in
                        try await connection.query("UPDATE attempt_probe SET value = 1 WHERE id = 1", logger: logger)
                        try AttemptDeadline.claimCommit()
                    }
                }
            }
            let waited = ContinuousClock.now - started
            // Well short of the lock's eight seconds, with room for a busy machine.
            #expect(waited < .seconds(5), "the attempt took \(waited) against a time-out of 1 s")

            try await holder.value
            // The blocked update ran once the lock was let go; its transaction did not commit.
            try await Task.sleep(for: .seconds(1))
            let rows = try await database.client.query("SELECT value FROM attempt_probe WHERE id = 1", logger: logger)
            var values: [Int] = []
            for try await value in rows.decode(Int.self) { values.append(value) }
            #expect(values == [0])
        }
    }

    /// A body that ignores its cancellation (a query blocked on a lock) does not hold the
    /// time-out up: it fails when the limit passes, long before the body ends.
    @Test func timeOutReturnsWhileTheBodyIgnoresCancellation() async throws {
        let finished = NIOLockedValueBox(false)
        let started = ContinuousClock.now
        await #expect(throws: AttemptTimedOut.self) {
            try await withTimeout(.milliseconds(200)) {
                // Not a cancellable wait: a thread sleeping, as a driver awaiting a reply does.
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    DispatchQueue.global().async {
                        Thread.sleep(forTimeInterval: 10)
                        continuation.resume()
                    }
                }
                finished.withLockedValue { $0 = true }
            }
        }
        #expect(!finished.withLockedValue { $0 })
        #expect(ContinuousClock.now - started < .seconds(9))
    }

    /// What an attempt's body does once its time-out was declared does not commit: asking
    /// to commit then fails, so its transaction rolls back. The body here goes on only once
    /// the time-out was declared, whatever the scheduling.
    @Test func bodyPastItsTimeOutMayNotCommit() async throws {
        let committed = NIOLockedValueBox(false)
        let refused = NIOLockedValueBox(false)
        let gate = NIOLockedValueBox<CheckedContinuation<Void, Never>?>(nil)
        let attempt = Task {
            try await withTimeout(.milliseconds(100)) {
                // Not cancellable: waits for the test to let it go.
                await withCheckedContinuation { continuation in gate.withLockedValue { $0 = continuation } }
                do {
                    try AttemptDeadline.claimCommit()
                    committed.withLockedValue { $0 = true }
                } catch {
                    refused.withLockedValue { $0 = true }
                    throw error
                }
            }
        }
        await #expect(throws: AttemptTimedOut.self) { try await attempt.value }
        var waiting: CheckedContinuation<Void, Never>?
        while waiting == nil {
            waiting = gate.withLockedValue { $0 }
            if waiting == nil { try await Task.sleep(for: .milliseconds(10)) }
        }
        waiting?.resume()
        let deadline = ContinuousClock.now + .seconds(10)
        while !refused.withLockedValue({ $0 }) && !committed.withLockedValue({ $0 }) && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(!committed.withLockedValue { $0 })
        #expect(refused.withLockedValue { $0 })
    }

    /// A body that claims its commit in time finishes it, even if the limit passes meanwhile.
    @Test func bodyThatClaimedItsCommitIsWaitedFor() async throws {
        let result = try await withTimeout(.seconds(1)) {
            try AttemptDeadline.claimCommit()
            try? await Task.sleep(for: .seconds(2))
            return 42
        }
        #expect(result == 42)
    }
}
