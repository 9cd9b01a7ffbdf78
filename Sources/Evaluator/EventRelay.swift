import BatchProcessing
import Kafka
import Logging
import Metrics
import Persistence
import ServiceLifecycle
import Shared

/// Publishes the events of the outbox, after the transactions that decided them have
/// committed: a batch that rolls back (a failed commit, a lost partition, a crash)
/// leaves no event behind, and its retry decides afresh, with the zones of then.
///
/// Each partition's events go out in the order they were decided (outbox id order),
/// and leave the outbox only once the broker has them: the first one the broker cannot
/// take now stops the flush, and it and everything after it wait for the next one
/// (at-least-once; a repeat keeps its event id). An event the broker refuses for what
/// it is (larger than the broker takes, say) goes to the events dead-letter topic with
/// the reason instead, so that it never holds up the partition.
///
/// The worker wakes the relay after every batch that decided events, and it flushes every
/// second besides, which also publishes what a worker that died after its commit left
/// behind for the partition's new owner. The batch does not wait for the broker: the next
/// batch is evaluated while the last one's events are being published.
final class EventRelay: Service, Sendable {
    let outbox: EventOutboxStore
    let producer: KafkaProducer
    let leases: PartitionLeases
    let group: String
    let topics: Topics
    let interval: Duration
    let logger: Logger
    let batchSize = 500
    /// One flush at a time in a process: two would publish the same events twice.
    private let flushing = RefreshLock()
    private let wakes: AsyncStream<Void>
    private let wakeUp: AsyncStream<Void>.Continuation
    private let published = Counter(label: "checkin_evaluator_events_published_total")
    private let deadLettered = Counter(label: "checkin_evaluator_event_dead_letters_total")

    init(
        outbox: EventOutboxStore, producer: KafkaProducer, leases: PartitionLeases, group: String, topics: Topics,
        interval: Duration = .seconds(1), logger: Logger
    ) {
        self.outbox = outbox
        self.producer = producer
        self.leases = leases
        self.group = group
        self.topics = topics
        self.interval = interval
        self.logger = logger
        (wakes, wakeUp) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        // The first flush at start: a previous owner may have left events behind.
        wakeUp.yield()
    }

    /// Asks for a flush of the held partitions now; returns at once.
    func wake() {
        wakeUp.yield()
    }

    func run() async throws {
        await withTaskGroup(of: Void.self) { ticker in
            ticker.addTask {
                while !Task.isCancelled {
                    try? await Task.sleep(for: self.interval)
                    self.wakeUp.yield()
                }
            }
            for await _ in wakes.cancelOnGracefulShutdown() {
                do {
                    try await cancelWhenGracefulShutdown { try await self.flush(partitions: self.heldPartitions) }
                } catch {
                    logger.warning("could not publish waiting events", metadata: ["error": "\(String(reflecting: error))"])
                }
            }
            ticker.cancelAll()
        }
    }

    /// The fixes topic's partitions this worker holds.
    var heldPartitions: [Int32] {
        leases.snapshot.keys.filter { $0.topic == topics.fixes }.map(\.partition).sorted()
    }

    /// Publishes every waiting event of these partitions, oldest first. Throws when the
    /// broker cannot take them now; they wait for the next flush.
    func flush(partitions: [Int32]) async throws {
        await flushing.lock()
        do {
            while try await flushOnce(partitions: partitions) == batchSize {}
            await flushing.unlock()
        } catch {
            await flushing.unlock()
            throw error
        }
    }

    /// Returns how many events it took from the outbox.
    private func flushOnce(partitions: [Int32]) async throws -> Int {
        let events = try await outbox.waiting(group: group, sourceTopic: topics.fixes, partitions: partitions, limit: batchSize)
        guard !events.isEmpty else { return 0 }
        let results = await producer.send(events.map(record(for:)))
        var done: [Int64] = []
        var stopped: (any Error)?
        for (event, result) in zip(events, results) {
            switch result {
            case .success:
                done.append(event.id)
            case .failure(let error):
                guard case .poison(let reason) = FailureClassifier.classify(error) else {
                    stopped = error
                    break
                }
                do {
                    try await producer.sendAll([deadLetter(for: event, reason: reason)])
                    logger.error(
                        "the broker refuses an event; it goes to the dead-letter topic",
                        metadata: ["eventId": "\(event.eventId)", "reason": "\(reason)"])
                    deadLettered.increment()
                    done.append(event.id)
                } catch {
                    stopped = error
                }
            }
            if stopped != nil { break }
        }
        try await outbox.remove(ids: done)
        published.increment(by: done.count)
        if let stopped { throw stopped }
        return events.count
    }

    func record(for event: OutboxEvent) -> KafkaRecord {
        KafkaRecord(
            topic: event.topic, key: Array(event.deviceId.utf8), value: Array(event.event.utf8),
            headers: [
                KafkaHeader(key: "event-id", value: Array(event.eventId.utf8)),
                KafkaHeader(key: "event-type", value: Array(event.eventType.utf8)),
            ])
    }

    /// The event as it would have been published, with why it was not and where its fix came from.
    func deadLetter(for event: OutboxEvent, reason: String) -> KafkaRecord {
        var record = record(for: event)
        record.topic = topics.eventsDeadLetter
        let prefix = Topics.deadLetterHeaderPrefix
        record.headers += [
            KafkaHeader(key: prefix + "error", value: Array(reason.utf8)),
            KafkaHeader(key: prefix + "origin-topic", value: Array(event.topic.utf8)),
            KafkaHeader(key: prefix + "origin-partition", value: Array(String(event.sourcePartition).utf8)),
        ]
        return record
    }
}
