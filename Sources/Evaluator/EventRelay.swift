import BatchProcessing
import Foundation
import Kafka
import Logging
import Metrics
import NIOConcurrencyHelpers
import Persistence
import ServiceLifecycle
import ServiceSupport
import Shared

/// Where the relay publishes events: the producer (a fault can be put in front of it).
protocol EventPublisher: Sendable {
    func send(_ records: [KafkaRecord]) async -> [Result<KafkaDeliveryReceipt, KafkaError>]
    /// A dead letter, cut to fit if it must be (see `DeadLetter`).
    func sendDeadLetter(_ letter: DeadLetter) async throws -> DeadLetter.Copy
}

extension KafkaProducer: EventPublisher {}

/// Publishes the events of the outbox, after the transactions that decided them have
/// committed: a batch that rolls back (a failed commit, a lost partition, a crash)
/// leaves no event behind, and its retry decides afresh, with the zones of then.
///
/// Each source partition is relayed on its own, so that a partition whose events the
/// broker cannot take now holds back no other. Within a partition a device's events go
/// out one at a time in the order they were decided (outbox id order), each only once
/// the broker has acknowledged the one before it, while different devices' events go
/// together: a failed publish never lets a later event of its device overtake it, on
/// either event topic. An event leaves the outbox only once the broker has it
/// (at-least-once; a repeat keeps its event id). An event the broker refuses for what it
/// is (larger than the broker takes, say) goes to the events dead-letter topic with the
/// reason instead, so that it never holds up the partition.
///
/// The worker wakes the relay after every batch that decided events, and it flushes every
/// second besides, which also publishes what a worker that died after its commit left
/// behind for the partition's new owner. The batch does not wait for the broker: the next
/// batch is evaluated while the last one's events are being published.
final class EventRelay: Service, Sendable {
    let outbox: EventOutboxStore
    let publisher: any EventPublisher
    let leases: PartitionLeases
    let group: String
    let topics: Topics
    let interval: Duration
    let logger: Logger
    /// Events read from one partition's outbox at a time.
    let batchSize: Int
    /// Partitions being flushed in this process: two flushes of one would publish its events twice.
    private let flushing = NIOLockedValueBox<Set<Int32>>([])
    /// Partitions with events decided since the last wake-up; nil: all the held ones.
    private let woken = NIOLockedValueBox<Set<Int32>?>(nil)
    private let wakes: AsyncStream<Void>
    private let wakeUp: AsyncStream<Void>.Continuation
    private let published = Counter(label: "checkin_evaluator_events_published_total")
    private let deadLettered = Counter(label: "checkin_evaluator_event_dead_letters_total")
    private let publishFailures = Counter(label: "checkin_evaluator_event_publish_failures_total")
    private let deadLettersRefused = Counter(label: "checkin_evaluator_event_dead_letters_refused_total")

    init(
        outbox: EventOutboxStore, publisher: any EventPublisher, leases: PartitionLeases, group: String, topics: Topics,
        interval: Duration = .seconds(1), batchSize: Int = 500, logger: Logger
    ) {
        self.outbox = outbox
        self.publisher = publisher
        self.leases = leases
        self.group = group
        self.topics = topics
        self.interval = interval
        self.batchSize = batchSize
        self.logger = logger
        (wakes, wakeUp) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        // The first flush at start: a previous owner may have left events behind.
        wakeUp.yield()
    }

    /// Asks for a flush of the held partitions now; returns at once.
    func wake() {
        woken.withLockedValue { $0 = nil }
        wakeUp.yield()
    }

    /// Asks for a flush of these partitions now (a batch decided events there); returns at once.
    func wake(partitions: some Sequence<Int32>) {
        woken.withLockedValue { woken in woken?.formUnion(partitions) }
        wakeUp.yield()
    }

    func run() async throws {
        await withDiscardingTaskGroup { publishing in
            publishing.addTask {
                while !Task.isCancelled {
                    try? await Task.sleep(for: self.interval)
                    self.wake()
                }
            }
            for await _ in wakes.cancelOnGracefulShutdown() {
                let asked = woken.withLockedValue { asked in
                    defer { asked = [] }
                    return asked
                }
                // A partition still being published is left to that publishing, which reads
                // again until its outbox is empty; the others are read now, in one query.
                let partitions = (asked.map { Array($0).sorted() } ?? heldPartitions + [Self.unknownPartition])
                    .filter(startFlushing)
                guard !partitions.isEmpty else { continue }
                let events: [Int32: [OutboxEvent]]
                do {
                    events = try await cancelWhenGracefulShutdown { try await self.waiting(partitions) }
                } catch {
                    partitions.forEach(stopFlushing)
                    logger.warning("could not read waiting events", metadata: ["error": "\(String(reflecting: error))"])
                    continue
                }
                for partition in partitions {
                    guard let waiting = events[partition] else {
                        stopFlushing(partition)
                        continue
                    }
                    publishing.addTask {
                        defer { self.stopFlushing(partition) }
                        do {
                            try await cancelWhenGracefulShutdown {
                                var read = try await self.publish(waiting)
                                while read == self.batchSize { read = try await self.flushOnce(partition: partition) }
                            }
                        } catch {
                            self.logger.warning(
                                "could not publish waiting events",
                                metadata: ["partition": "\(partition)", "error": "\(String(reflecting: error))"])
                        }
                    }
                }
            }
            publishing.cancelAll()
        }
    }

    /// Events whose fix's partition is not known (written before partitions were kept).
    static let unknownPartition: Int32 = -1

    /// The fixes topic's partitions this worker holds.
    var heldPartitions: [Int32] {
        leases.snapshot.keys.filter { $0.topic == topics.fixes }.map(\.partition).sorted()
    }

    private func startFlushing(_ partition: Int32) -> Bool {
        flushing.withLockedValue { $0.insert(partition).inserted }
    }

    private func stopFlushing(_ partition: Int32) {
        _ = flushing.withLockedValue { $0.remove(partition) }
    }

    /// Each partition's oldest waiting events, up to a batch of each.
    private func waiting(_ partitions: [Int32]) async throws -> [Int32: [OutboxEvent]] {
        Dictionary(
            grouping: try await outbox.waiting(group: group, sourceTopic: topics.fixes, partitions: partitions, limit: batchSize),
            by: \.sourcePartition)
    }

    /// Publishes every waiting event of these partitions, each partition on its own.
    /// Throws the first error of a partition whose events the broker cannot take now; they
    /// wait for the next flush, and the other partitions are published all the same.
    func flush(partitions: [Int32]) async throws {
        let failures = await withTaskGroup(of: (any Error)?.self, returning: [any Error].self) { flushes in
            for partition in partitions where startFlushing(partition) {
                flushes.addTask {
                    defer { self.stopFlushing(partition) }
                    do {
                        while try await self.flushOnce(partition: partition) == self.batchSize {}
                        return nil
                    } catch {
                        return error
                    }
                }
            }
            return await flushes.reduce(into: []) { errors, error in if let error { errors.append(error) } }
        }
        if let first = failures.first { throw first }
    }

    /// Reads and publishes one batch of a partition's waiting events; returns how many it read.
    private func flushOnce(partition: Int32) async throws -> Int {
        try await publish(waiting([partition])[partition] ?? [])
    }

    /// Publishes one partition's events (in decision order) and takes those the broker has
    /// out of the outbox; returns how many there were. Throws when the broker could not take
    /// some now: they wait for the next flush.
    private func publish(_ events: [OutboxEvent]) async throws -> Int {
        guard !events.isEmpty else { return 0 }
        let outcome = await publishInDeviceOrder(events)
        try await outbox.remove(ids: outcome.done)
        published.increment(by: outcome.done.count)
        if let stopped = outcome.stopped { throw stopped }
        return events.count
    }

    /// Publishes events in waves: each device's first unpublished event, then, once the
    /// broker has those, each device's next, and so on. A device whose event the broker
    /// cannot take now publishes nothing more in this flush.
    func publishInDeviceOrder(_ events: [OutboxEvent]) async -> (done: [Int64], stopped: (any Error)?) {
        var queues: [String: ArraySlice<OutboxEvent>] = [:]
        var devices: [String] = []
        for event in events {
            if queues[event.deviceId] == nil { devices.append(event.deviceId) }
            queues[event.deviceId, default: []].append(event)
        }
        var done: [Int64] = []
        var stopped: (any Error)?
        while true {
            let wave = devices.compactMap { queues[$0]?.first }
            guard !wave.isEmpty else { break }
            let results = await publisher.send(wave.map(record(for:)))
            let now = Date()
            for (event, result) in zip(wave, results) {
                switch result {
                case .success:
                    done.append(event.id)
                    PipelineStage.publish.record(from: event.decidedAt, to: now)
                    queues[event.deviceId]?.removeFirst()
                case .failure(let error):
                    if case .poison(let reason, _) = FailureClassifier.classify(error),
                        await setAside(event, reason: reason)
                    {
                        done.append(event.id)
                        queues[event.deviceId]?.removeFirst()
                    } else {
                        publishFailures.increment()
                        stopped = stopped ?? error
                        queues[event.deviceId] = nil
                    }
                }
                if queues[event.deviceId]?.isEmpty == true { queues[event.deviceId] = nil }
            }
            devices.removeAll { queues[$0] == nil }
        }
        return (done, stopped)
    }

    /// Sends an event the broker refuses to the events dead-letter topic, cut to fit if it
    /// must be; false when the broker cannot take it now (it stays in the outbox, and its
    /// device waits). One the dead-letter topic refuses in every form is accounted for in
    /// the log and a metric, and its partition moves on.
    private func setAside(_ event: OutboxEvent, reason: String) async -> Bool {
        do {
            let copy = try await publisher.sendDeadLetter(deadLetter(for: event, reason: reason))
            logger.error(
                "the broker refuses an event; it goes to the dead-letter topic",
                metadata: ["eventId": "\(event.eventId)", "reason": "\(reason)", "copy": "\(copy.rawValue)"])
            deadLettered.increment()
            return true
        } catch let refused as DeadLetterRefused {
            deadLettersRefused.increment()
            logger.error(
                "the events dead-letter topic refuses the event in every form; moving past it",
                metadata: [
                    "eventId": "\(event.eventId)", "deviceId": "\(event.deviceId)", "bytes": "\(event.event.utf8.count)",
                    "sha256": "\(DeadLetter.sha256Hex(Array(event.event.utf8)))", "reason": "\(reason)",
                    "error": "\(refused)",
                ])
            return true
        } catch {
            return false
        }
    }

    func record(for event: OutboxEvent) -> KafkaRecord {
        var headers = [
            KafkaHeader(key: "event-id", value: Array(event.eventId.utf8)),
            KafkaHeader(key: "event-type", value: Array(event.eventType.utf8)),
        ]
        if let accepted = event.fixAcceptedAt {
            headers.append(KafkaHeader(key: PipelineStage.fixAcceptedHeader, value: PipelineStage.headerValue(accepted)))
        }
        return KafkaRecord(topic: event.topic, key: Array(event.deviceId.utf8), value: Array(event.event.utf8), headers: headers)
    }

    /// The event as it would have been published, with why it was not and where its fix came from.
    func deadLetter(for event: OutboxEvent, reason: String) -> DeadLetter {
        let record = record(for: event)
        return DeadLetter(
            topic: topics.eventsDeadLetter, key: record.key, value: record.value, headers: record.headers, reason: reason,
            origin: [
                (DeadLetter.HeaderName.originTopic, event.topic),
                (DeadLetter.HeaderName.originPartition, String(event.sourcePartition)),
            ],
            headerPrefix: Topics.deadLetterHeaderPrefix)
    }
}
