import BatchProcessing
import Kafka
import Logging
import NIOConcurrencyHelpers
import Testing

/// A record is set aside only when it fails alone, again and again: a failure of the moment
/// that reads as the record's fault does not send a good record to the dead-letter topic.
@Suite struct PoisonConfirmationTests {
    let logger = Logger.forTests("test.poison-confirmation", level: .critical)

    struct Refused: Error {}
    struct Oversized: RecordFault {}

    /// Runs eight records through an isolator whose attempts fail while they hold offset 5 and
    /// `failuresOfFive` has not run out; returns what was processed and what was dead-lettered.
    func settle(failuresOfFive: Int, failure: any Error = Refused()) async throws -> (
        processed: [Int64], deadLettered: [Int64], attemptsOfFive: Int
    ) {
        let remaining = NIOLockedValueBox(failuresOfFive)
        let attemptsOfFive = NIOLockedValueBox(0)
        let processed = NIOLockedValueBox<[Int64]>([])
        let deadLettered = NIOLockedValueBox<[Int64]>([])
        let isolator = PoisonIsolator<Void>(
            attemptTimeout: .seconds(10), backoff: Backoff(initial: .milliseconds(1), maximum: .milliseconds(5)),
            health: ProcessingHealth(service: "test", readiness: nil), logger: logger,
            attempt: { records in
                if records.contains(where: { $0.offset == 5 }) {
                    attemptsOfFive.withLockedValue { $0 += 1 }
                    let fails = remaining.withLockedValue { count in
                        defer { count -= 1 }
                        return count > 0
                    }
                    if fails { throw failure }
                }
                processed.withLockedValue { $0 += records.map(\.offset) }
            },
            deadLetter: { message, _ in deadLettered.withLockedValue { $0.append(message.offset) } },
            unhealthyComponent: { nil })
        let messages = (0..<8).map {
            KafkaConsumerMessage(topic: "events", partition: 0, offset: Int64($0), value: Array("\($0)".utf8))
        }
        let settlement = try await settledWithin(.seconds(30)) { await isolator.settle(messages) }
        _ = try #require(settlement)
        return (processed.withLockedValue { $0 }, deadLettered.withLockedValue { $0 }, attemptsOfFive.withLockedValue { $0 })
    }

    /// Offset 5 fails in the whole batch, in each half that holds it, and once alone; tried
    /// again alone, it succeeds: nothing is dead-lettered and every record is processed in order.
    @Test func aRecordThatFailsOnceAloneIsTriedAgainNotSetAside() async throws {
        // Eight records, then four, then two, then five alone: four failures, the last alone.
        let (processed, deadLettered, attempts) = try await settle(failuresOfFive: 4)
        #expect(deadLettered.isEmpty)
        #expect(processed == [0, 1, 2, 3, 4, 5, 6, 7])
        #expect(attempts == 5)
    }

    /// A record that fails every time is set aside after failing alone
    /// `attemptsAloneBeforeSettingAside` times, and its partition moves on.
    @Test func aRecordThatAlwaysFailsIsSetAsideAfterFailingAloneRepeatedly() async throws {
        let (processed, deadLettered, attempts) = try await settle(failuresOfFive: .max)
        #expect(deadLettered == [5])
        #expect(processed == [0, 1, 2, 3, 4, 6, 7])
        // The whole batch, the half and the quarter that hold it, then alone.
        #expect(attempts == 3 + PoisonIsolator<Void>.attemptsAloneBeforeSettingAside)
    }

    /// A failure certainly the record's own (here one marked ``RecordFault``, as an event larger
    /// than the broker takes is) sets the record aside at its first failure alone.
    @Test func aRecordCertainlyAtFaultIsSetAsideAtItsFirstFailureAlone() async throws {
        let (processed, deadLettered, attempts) = try await settle(failuresOfFive: .max, failure: Oversized())
        #expect(deadLettered == [5])
        #expect(processed == [0, 1, 2, 3, 4, 6, 7])
        #expect(attempts == 4)
    }

    /// A broker error that passes with time (no leader for the partition, for now) retries the
    /// whole batch however often it recurs: no record is split out or set aside for it.
    @Test func aBrokerErrorThatPassesRetriesTheBatchAndSetsNothingAside() async throws {
        let (processed, deadLettered, attempts) = try await settle(
            failuresOfFive: 6, failure: KafkaError(message: "delivery failed", code: .leaderNotAvailable))
        #expect(deadLettered.isEmpty)
        #expect(processed == [0, 1, 2, 3, 4, 5, 6, 7])
        #expect(attempts == 7)
    }

    /// A broker error about the record itself (larger than the broker takes) sets the record
    /// aside at its first failure alone.
    @Test func aBrokerErrorAboutTheRecordSetsItAsideAtItsFirstFailureAlone() async throws {
        let (processed, deadLettered, attempts) = try await settle(
            failuresOfFive: .max, failure: KafkaError(message: "delivery failed", code: .messageSizeTooLarge))
        #expect(deadLettered == [5])
        #expect(processed == [0, 1, 2, 3, 4, 6, 7])
        #expect(attempts == 4)
    }
}
