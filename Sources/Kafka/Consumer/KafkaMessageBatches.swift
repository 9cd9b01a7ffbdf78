import NIOConcurrencyHelpers
import NIOCore

/// A batch as polled, with the generation of each partition at poll time.
struct PolledBatch: Sendable {
    var messages: [KafkaConsumerMessage]
    var generations: [KafkaTopicPartition: UInt64]
}

/// The consumer's messages in batches, with backpressure: when the
/// application falls behind, the consumer stops polling until it catches up.
/// Messages of partitions revoked after they were polled are left out.
package struct KafkaMessageBatches: AsyncSequence, Sendable {
    package typealias Element = [KafkaConsumerMessage]
    typealias Wrapped = NIOThrowingAsyncSequenceProducer<
        PolledBatch, any Error, NIOAsyncSequenceProducerBackPressureStrategies.HighLowWatermark, BatchDemand
    >

    let wrapped: Wrapped
    let state: NIOLockedValueBox<ConsumerStateMachine>

    /// The sequence and the source the poll thread yields into; a few batches
    /// ahead of the application, then the gate closes and polling pauses.
    static func make(
        state: NIOLockedValueBox<ConsumerStateMachine>, gate: PollGate
    ) -> (batches: KafkaMessageBatches, source: Wrapped.Source) {
        let sequence = Wrapped.makeSequence(
            elementType: PolledBatch.self,
            failureType: (any Error).self,
            backPressureStrategy: .init(lowWatermark: 1, highWatermark: 4),
            finishOnDeinit: true,
            delegate: BatchDemand(gate: gate)
        )
        return (KafkaMessageBatches(wrapped: sequence.sequence, state: state), sequence.source)
    }

    package func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(wrapped: wrapped.makeAsyncIterator(), state: state)
    }

    package struct AsyncIterator: AsyncIteratorProtocol {
        var wrapped: Wrapped.AsyncIterator
        let state: NIOLockedValueBox<ConsumerStateMachine>

        package mutating func next() async throws -> [KafkaConsumerMessage]? {
            while let batch = try await wrapped.next() {
                let current = state.withLockedValue { state in
                    batch.generations.filter { state.isCurrent($0.key, generation: $0.value) }
                }
                if current.count == batch.generations.count { return batch.messages }
                let kept = batch.messages.filter { current[$0.topicPartition] != nil }
                if !kept.isEmpty { return kept }
            }
            return nil
        }
    }
}

/// Turns the sequence's demand signals into the poll thread's go/stop.
final class BatchDemand: NIOAsyncSequenceProducerDelegate {
    let gate: PollGate

    init(gate: PollGate) {
        self.gate = gate
    }

    func produceMore() {
        gate.setDemand(true)
    }

    func didTerminate() {
        gate.setDemand(false)
    }
}
