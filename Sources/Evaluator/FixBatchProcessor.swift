import BatchProcessing
import Foundation
import Geofence
import Kafka
import Logging
import Metrics
import Persistence
import ServiceSupport
import Shared

/// Evaluates one batch of fix records and makes its outcome durable as a unit.
///
/// Inside one Postgres transaction it locks the batch's device states, runs the
/// engine, writes the resulting events to the outbox (and publishes the dead letters
/// of invalid fixes), then saves the new states (each with the partition its fixes
/// came from) together with the partitions' next offsets and the latest record time
/// consumed (what the stale check-out is judged against), and commits only if this
/// worker's epochs for those partitions are still current. The events are published
/// after the commit (``EventRelay``): an event exists only if the state that decided
/// it committed. A crash or a failed commit replays the batch from the old state, with
/// the zones of then, and nothing of the failed attempt was published; a worker that
/// lost its partitions while it stalled rolls back instead of overwriting newer states.
struct FixBatchProcessor: Sendable {
    let configuration: EvaluatorConfiguration
    let database: Database
    let producer: KafkaProducer
    let catalog: ZoneCatalog
    let logger: Logger

    let states: DeviceStateStore
    let offsets: OffsetStore
    let ownership: PartitionOwnershipStore
    let leases: PartitionLeases
    let outbox: EventOutboxStore
    let erasures: ErasureStore
    /// Writes the decision records of committed batches.
    let recorder: DecisionRecorder
    let relay: EventRelay
    let stateResets = Counter(label: "checkin_evaluator_state_resets_total")
    /// Records that not even a summary of could be dead-lettered (see ``DeadLetterRefused``).
    let deadLettersRefused = Counter(label: "checkin_evaluator_dead_letters_refused_total")
    /// What a record carries besides its value and key (headers, framing), allowed for
    /// when an event is checked against the producer's message limit.
    static let recordOverheadBytes = 256

    init(
        configuration: EvaluatorConfiguration, database: Database, producer: KafkaProducer, catalog: ZoneCatalog,
        leases: PartitionLeases, logger: Logger
    ) {
        self.configuration = configuration
        self.database = database
        self.producer = producer
        self.catalog = catalog
        self.logger = logger
        self.states = DeviceStateStore(logger: logger)
        self.offsets = OffsetStore(database: database, logger: logger)
        self.ownership = PartitionOwnershipStore(database: database, logger: logger)
        self.leases = leases
        self.outbox = EventOutboxStore(database: database, logger: logger)
        self.erasures = ErasureStore(database: database, logger: logger)
        self.recorder = DecisionRecorder(database: database, fixesTopic: configuration.topics.fixes, logger: logger)
        self.relay = EventRelay(
            outbox: outbox, publisher: producer, leases: leases, group: configuration.groupId,
            topics: configuration.topics, logger: logger)
    }

    struct Outcome {
        var nextOffsets: [KafkaTopicPartition: Int64] = [:]
        /// Per partition, the latest record time of the batch less the producers' allowed skew:
        /// its stream is consumed up to there, by any producer's clock.
        var consumedUntil: [OwnedPartition: Date] = [:]
        var evaluated = 0
        var late = 0
        var duplicate = 0
        /// Fixes accepted before an erasure of their device, dropped unevaluated.
        var erased = 0
        /// Erasures this batch carried out on reaching their markers first.
        var erasuresCarriedOut = 0
        var invalid = 0
        var checkIns = 0
        var checkOuts = 0
        /// The partitions whose fixes decided events: the relay publishes theirs.
        var eventPartitions: Set<Int32> = []
        /// Decision entries by outcome and reason, for `checkin_evaluator_decisions_total`.
        var entries: [DecisionTally: Int] = [:]
        /// The batch's decision records, handed to the recorder once it committed.
        var records: [NewDecisionRecord] = []
    }

    struct DecisionTally: Hashable {
        var outcome: DecisionOutcome
        var reason: DecisionReason?
    }

    func process(_ batch: [KafkaConsumerMessage]) async throws -> Outcome {
        let epochs = try leases.epochs(covering: batch.map(\.topicPartition))
        do {
            return try await evaluate(batch, under: epochs)
        } catch let lost as PartitionOwnershipLost {
            // Not ours any more: later batches of these partitions are left to their owner at once.
            leases.released(lost, heldUnder: epochs)
            throw lost
        }
    }

    private func evaluate(_ batch: [KafkaConsumerMessage], under epochs: [OwnedPartition: Int64]) async throws -> Outcome {
        var outcome = Outcome()
        var fixes: [(message: KafkaConsumerMessage, fix: Fix)] = []
        var markers: [(message: KafkaConsumerMessage, marker: ErasureMarker)] = []
        var deadLetters: [KafkaRecord] = []
        var firstOffsets: [Int32: Int64] = [:]
        for message in batch {
            let key = KafkaTopicPartition(topic: message.topic, partition: message.partition)
            outcome.nextOffsets[key] = max(outcome.nextOffsets[key] ?? 0, message.offset + 1)
            firstOffsets[message.partition] = min(firstOffsets[message.partition] ?? message.offset, message.offset)
            if let stamp = message.timestamp.map(consumedUntil(stampedAt:)) {
                let owned = OwnedPartition(topic: message.topic, partition: message.partition)
                outcome.consumedUntil[owned] = max(outcome.consumedUntil[owned] ?? stamp, stamp)
            }
            if let header = message.headers.first(where: { $0.key == ErasureMarker.headerKey }) {
                // Not a fix: where the device's earlier life ends. One that names no erasure
                // requested of its device is passed over.
                if let id = ErasureMarker.erasureId(inHeaderValue: header.value),
                    let marker = try? JSONDecoder().decode(ErasureMarker.self, from: Data(message.value)), marker.erasureId == id
                {
                    markers.append((message, marker))
                }
                continue
            }
            switch FixJSONDecoder.decode(message.value, receivedAt: message.timestamp ?? Date(), limits: configuration.limits) {
            case .success(let fix): fixes.append((message, fix))
            case .failure(let invalid):
                outcome.invalid += 1
                deadLetters.append(deadLetter(for: message, reason: invalid.description).record(fittingIn: producer.maximumMessageBytes))
            }
        }

        let engines = try await catalog.engines()
        let committed = try await database.withTransaction { connection in
            var result = outcome
            // Erasures first, by position: an erasure at one of these partitions commits before
            // this batch (and it sees the erasure's marks) or waits for it (and erases what it wrote).
            try await ErasureStore.holdPositions(
                topic: configuration.topics.fixes, partitions: firstOffsets.keys, on: connection, logger: logger)
            for (message, marker) in markers {
                let position = ErasurePosition(topic: message.topic, partition: message.partition, offset: message.offset)
                if try await erasures.carryOut(
                    id: marker.erasureId, projectId: marker.projectId, deviceId: marker.deviceId, at: position, on: connection)
                    != nil
                {
                    result.erasuresCarriedOut += 1
                }
            }
            let marks = try await erasures.marks(topic: configuration.topics.fixes, from: firstOffsets, on: connection)
            let kept =
                marks.isEmpty
                ? fixes
                : fixes.filter { message, fix in
                    !marks.erases(
                        DeviceKey(projectId: fix.projectId, deviceId: fix.deviceId), partition: message.partition,
                        offset: message.offset)
                }
            result.erased = fixes.count - kept.count
            let keys = Set(kept.map { DeviceKey(projectId: $0.fix.projectId, deviceId: $0.fix.deviceId) })
            let stored = try await states.lockStates(keys, on: connection)
            var current: [DeviceKey: DeviceState] = [:]
            for key in keys {
                current[key] = stored[key].map { decodeState($0, key: key) } ?? DeviceState()
            }
            // As read: a state the batch left as it was is not written again.
            let before = current
            var partitions: [DeviceKey: Int32] = [:]
            var events: [OutboxEvent] = []
            if configuration.recordDecisions { result.records.reserveCapacity(fixes.count) }
            // One clock reading for the batch: its records were decided together (and reading
            // Foundation's clock per fix showed in the evaluator's profile).
            let decidedAt = Date()
            for (message, fix) in kept {
                let key = DeviceKey(projectId: fix.projectId, deviceId: fix.deviceId)
                partitions[key] = message.partition
                let evaluation = engines.engine(for: fix.projectId).evaluate(fix, state: &current[key, default: DeviceState()])
                switch evaluation.outcome {
                case .evaluated: result.evaluated += 1
                case .late: result.late += 1
                case .duplicate: result.duplicate += 1
                }
                for event in evaluation.events {
                    if event.type == .checkin { result.checkIns += 1 } else { result.checkOuts += 1 }
                    result.eventPartitions.insert(message.partition)
                    events.append(try outboxEvent(for: event, from: message.partition, acceptedAt: message.timestamp))
                }
                for entry in evaluation.entries {
                    result.entries[DecisionTally(outcome: entry.outcome, reason: entry.reason), default: 0] += 1
                }
                if configuration.recordDecisions {
                    result.records.append(
                        decisionRecord(of: fix, key: key, evaluation: evaluation, decidedAt: decidedAt, from: message))
                }
            }
            // Dead letters are the input as it came, not decisions: published now (again,
            // should the batch be retried).
            try await producer.sendAll(deadLetters)
            try await outbox.add(events, group: configuration.groupId, sourceTopic: configuration.topics.fixes, on: connection)
            // The state's last evaluated fix, not this batch's: a batch of late fixes only
            // must not blank out when the device was last seen.
            let toSave = current.compactMap { key, state -> StoredDeviceState? in
                guard stored[key] == nil || state != before[key] else { return nil }
                return StoredDeviceState(
                    key: key, state: state.binaryEncoded(), lastFixAt: state.lastFixTime,
                    staleAt: engines.engine(for: key.projectId).staleDeadline(of: state), partition: partitions[key])
            }
            try await states.save(toSave, on: connection)
            try await offsets.save(
                group: configuration.groupId,
                offsets: result.nextOffsets.map { (topic: $0.key.topic, partition: $0.key.partition, nextOffset: $0.value) },
                consumedUntil: result.consumedUntil, on: connection)
            try await ownership.verify(group: configuration.groupId, epochs: epochs, on: connection)
            // Last: an attempt given up for its time-out must not commit after all.
            try AttemptDeadline.claimCommit()
            return result
        }
        if committed.checkIns + committed.checkOuts > 0 {
            relay.wake(partitions: committed.eventPartitions)
        }
        await recorder.record(committed.records)
        let now = Date()
        for (message, _) in fixes { PipelineStage.evaluate.record(from: message.timestamp, to: now) }
        return committed
    }

    /// The fix's decision record, the same the offline replay makes.
    func decisionRecord(
        of fix: Fix, key: DeviceKey, evaluation: Evaluation, decidedAt: Date, from message: KafkaConsumerMessage
    ) -> NewDecisionRecord {
        var record = Replay.decisionRecord(of: fix, evaluation)
        record.evaluatedAt = decidedAt
        return NewDecisionRecord(key: key, record: record, partition: message.partition, offset: message.offset)
    }

    /// Has the relay publish what the committed batch decided, without waiting for it: the
    /// batch is committed whatever happens there, and events the broker cannot take now wait
    /// in the outbox for the relay's next flush.
    func publishDecidedEvents() {
        relay.wake()
    }

    /// Sends a record that cannot be processed to the dead-letter topic, then moves its
    /// partition past it (under the same epoch check as a batch).
    func setAside(_ message: KafkaConsumerMessage, reason: String) async throws {
        let epochs = try leases.epochs(covering: [message.topicPartition])
        do {
            let letter = deadLetter(for: message, reason: reason)
            do {
                let copy = try await producer.sendDeadLetter(letter)
                if copy != .whole {
                    logger.warning(
                        "dead-lettered a record too large to copy as it is",
                        metadata: [
                            "copy": "\(copy.rawValue)", "bytes": "\(message.value.count)", "offset": "\(message.offset)",
                        ])
                }
            } catch let refused as DeadLetterRefused {
                // Retrying cannot help: the record is accounted for here, and its partition moves on.
                deadLettersRefused.increment()
                logger.error(
                    "the dead-letter topic refuses the record in every form; moving past it",
                    metadata: [
                        "topic": "\(message.topic)", "partition": "\(message.partition)", "offset": "\(message.offset)",
                        "bytes": "\(message.value.count)", "sha256": "\(DeadLetter.sha256Hex(message.value))",
                        "reason": "\(reason)", "error": "\(refused)",
                    ])
            }
            try await database.withTransaction { connection in
                try await offsets.save(
                    group: configuration.groupId,
                    offsets: [(topic: message.topic, partition: message.partition, nextOffset: message.offset + 1)],
                    consumedUntil: message.timestamp.map {
                        [OwnedPartition(topic: message.topic, partition: message.partition): consumedUntil(stampedAt: $0)]
                    }
                        ?? [:], on: connection)
                try await ownership.verify(group: configuration.groupId, epochs: epochs, on: connection)
                try AttemptDeadline.claimCommit()
            }
        } catch let lost as PartitionOwnershipLost {
            leases.released(lost, heldUnder: epochs)
            throw lost
        }
    }

    /// How far a record stamped at `stamp` shows its partition consumed: a producer whose
    /// clock is behind the one that stamped it by up to `maximumProducerSkew` may still send
    /// records stamped earlier.
    func consumedUntil(stampedAt stamp: Date) -> Date {
        stamp.addingTimeInterval(-configuration.maximumProducerSkew.seconds)
    }

    /// A stored state that no longer decodes would fail its batch on every retry and
    /// stall the partition; the device starts afresh instead, loudly.
    func decodeState(_ stored: [UInt8], key: DeviceKey) -> DeviceState {
        do {
            return try DeviceState(storedBytes: stored)
        } catch {
            stateResets.increment()
            logger.error(
                "stored device state is unreadable; starting the device afresh",
                metadata: ["projectId": "\(key.projectId)", "deviceId": "\(key.deviceId)", "error": "\(error)"])
            return DeviceState()
        }
    }

    /// The event as the outbox keeps it. An event the producer could never send fails the
    /// batch now, so that the fix deciding it is the record set aside, not the event.
    func outboxEvent(for event: CheckEvent, from partition: Int32, acceptedAt: Date? = nil) throws -> OutboxEvent {
        let encoded = String(decoding: try event.wireJSON(), as: UTF8.self)
        let bytes = encoded.utf8.count + event.deviceId.utf8.count + Self.recordOverheadBytes
        guard bytes <= producer.maximumMessageBytes else {
            throw EventTooLarge(eventId: event.eventId, bytes: bytes, limit: producer.maximumMessageBytes)
        }
        return OutboxEvent(
            sourcePartition: partition,
            topic: event.type == .checkin ? configuration.topics.checkIns : configuration.topics.checkOuts,
            deviceId: event.deviceId, eventId: event.eventId, eventType: event.type.rawValue, event: encoded,
            fixAcceptedAt: acceptedAt,
            log: EventLogKeys(
                projectId: event.projectId, zoneId: event.zone.id,
                eventTime: event.checkOutTime ?? event.location.timestamp, sequence: event.sequence))
    }

    /// The original record with why it was refused and where it came from; produced
    /// whole, or cut to what the producer sends (see ``DeadLetter``).
    func deadLetter(for message: KafkaConsumerMessage, reason: String) -> DeadLetter {
        DeadLetter(
            of: message, topic: configuration.topics.fixesDeadLetter, reason: reason,
            headerPrefix: Topics.deadLetterHeaderPrefix)
    }
}

/// An event larger than the producer sends (its `message.max.bytes`).
struct EventTooLarge: RecordFault, CustomStringConvertible {
    var eventId: String
    var bytes: Int
    var limit: Int

    var description: String {
        "event \(eventId) takes \(bytes) bytes as a record, more than the producer's message.max.bytes (\(limit))"
    }
}
