import Foundation
import Geofence
import Kafka
import Logging
import Metrics
import Persistence
import Shared

/// Evaluates one batch of fix records and makes its outcome durable as a unit.
///
/// Inside one Postgres transaction it locks the batch's device states, runs the
/// engine, publishes the resulting events (and dead letters) and waits for the
/// broker's acknowledgements, then saves the new states (each with the partition its
/// fixes came from) together with the partitions' next offsets and the latest record
/// time consumed (what the stale check-out is judged against), and commits only if
/// this worker's epochs for those partitions are still current. A crash anywhere
/// before the commit replays the batch from the old state, which yields the same
/// events with the same ids, so consumers downstream see duplicates at worst, never a
/// gap; a worker that lost its partitions while it stalled rolls back instead of
/// overwriting newer states.
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
    let stateResets = Counter(label: "checkin_evaluator_state_resets_total")

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
    }

    struct Outcome {
        var nextOffsets: [KafkaTopicPartition: Int64] = [:]
        /// Per partition, the latest record time of the batch: its stream is consumed up to there.
        var consumedUntil: [OwnedPartition: Date] = [:]
        var evaluated = 0
        var late = 0
        var duplicate = 0
        var invalid = 0
        var checkIns = 0
        var checkOuts = 0
    }

    func process(_ batch: [KafkaConsumerMessage]) async throws -> Outcome {
        do {
            return try await evaluate(batch)
        } catch let lost as PartitionOwnershipLost {
            // Not ours any more: later batches of these partitions are left to their owner at once.
            leases.released(lost.topicPartitions)
            throw lost
        }
    }

    private func evaluate(_ batch: [KafkaConsumerMessage]) async throws -> Outcome {
        let epochs = try leases.epochs(covering: batch.map(\.topicPartition))
        var outcome = Outcome()
        var fixes: [(message: KafkaConsumerMessage, fix: Fix)] = []
        var deadLetters: [KafkaRecord] = []
        for message in batch {
            let key = KafkaTopicPartition(topic: message.topic, partition: message.partition)
            outcome.nextOffsets[key] = max(outcome.nextOffsets[key] ?? 0, message.offset + 1)
            if let stamp = message.timestamp {
                let owned = OwnedPartition(topic: message.topic, partition: message.partition)
                outcome.consumedUntil[owned] = max(outcome.consumedUntil[owned] ?? stamp, stamp)
            }
            switch FixValidator.validate(json: message.value, receivedAt: message.timestamp ?? Date(), limits: configuration.limits) {
            case .success(let fix): fixes.append((message, fix))
            case .failure(let invalid):
                outcome.invalid += 1
                deadLetters.append(deadLetter(for: message, reason: invalid.description))
            }
        }

        let engines = try await catalog.engines()
        let decoder = WireJSON.decoder()
        let encoder = WireJSON.encoder()
        let committed = try await database.withTransaction { connection in
            var result = outcome
            let keys = Set(fixes.map { DeviceKey(projectId: $0.fix.projectId, deviceId: $0.fix.deviceId) })
            let stored = try await states.lockStates(keys, on: connection)
            var current: [DeviceKey: DeviceState] = [:]
            for key in keys {
                current[key] = stored[key].map { decodeState($0, key: key, decoder: decoder) } ?? DeviceState()
            }
            var partitions: [DeviceKey: Int32] = [:]
            var records = deadLetters
            for (message, fix) in fixes {
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
                    records.append(try record(for: event, encoder: encoder))
                }
            }
            try await producer.sendAll(records)
            // The state's last evaluated fix, not this batch's: a batch of late fixes only
            // must not blank out when the device was last seen.
            let toSave = try current.map { key, state in
                StoredDeviceState(
                    key: key, stateJSON: String(decoding: try encoder.encode(state), as: UTF8.self),
                    lastFixAt: state.lastFixTime, staleAt: engines.engine(for: key.projectId).staleDeadline(of: state),
                    partition: partitions[key])
            }
            try await states.save(toSave, on: connection)
            try await offsets.save(
                group: configuration.groupId,
                offsets: result.nextOffsets.map { (topic: $0.key.topic, partition: $0.key.partition, nextOffset: $0.value) },
                consumedUntil: result.consumedUntil, on: connection)
            try await ownership.verify(group: configuration.groupId, epochs: epochs, on: connection)
            return result
        }
        return committed
    }

    /// Sends a record that cannot be processed to the dead-letter topic, then moves its
    /// partition past it (under the same epoch check as a batch).
    func setAside(_ message: KafkaConsumerMessage, reason: String) async throws {
        do {
            let epochs = try leases.epochs(covering: [message.topicPartition])
            try await producer.sendAll([deadLetter(for: message, reason: reason)])
            try await database.withTransaction { connection in
                try await offsets.save(
                    group: configuration.groupId,
                    offsets: [(topic: message.topic, partition: message.partition, nextOffset: message.offset + 1)],
                    consumedUntil: message.timestamp.map { [OwnedPartition(topic: message.topic, partition: message.partition): $0] }
                        ?? [:], on: connection)
                try await ownership.verify(group: configuration.groupId, epochs: epochs, on: connection)
            }
        } catch let lost as PartitionOwnershipLost {
            leases.released(lost.topicPartitions)
            throw lost
        }
    }

    /// A stored state that no longer decodes would fail its batch on every retry and
    /// stall the partition; the device starts afresh instead, loudly.
    func decodeState(_ json: String, key: DeviceKey, decoder: JSONDecoder) -> DeviceState {
        do {
            return try decoder.decode(DeviceState.self, from: Data(json.utf8))
        } catch {
            stateResets.increment()
            logger.error(
                "stored device state is unreadable; starting the device afresh",
                metadata: ["projectId": "\(key.projectId)", "deviceId": "\(key.deviceId)", "error": "\(error)"])
            return DeviceState()
        }
    }

    /// Publishes and waits until the broker has every record; any failure aborts the batch.
    func record(for event: CheckEvent, encoder: JSONEncoder) throws -> KafkaRecord {
        KafkaRecord(
            topic: event.type == .checkin ? configuration.topics.checkIns : configuration.topics.checkOuts,
            key: Array(event.deviceId.utf8), value: Array(try encoder.encode(event)),
            headers: [
                KafkaHeader(key: "event-id", value: Array(event.eventId.utf8)),
                KafkaHeader(key: "event-type", value: Array(event.type.rawValue.utf8)),
            ])
    }

    /// The original record, unchanged, with why it was refused and where it came from.
    func deadLetter(for message: KafkaConsumerMessage, reason: String) -> KafkaRecord {
        KafkaRecord(
            deadLetterOf: message, topic: configuration.topics.fixesDeadLetter, reason: reason,
            headerPrefix: Topics.deadLetterHeaderPrefix)
    }
}
