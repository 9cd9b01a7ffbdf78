import BatchProcessing
import Foundation
import Kafka
import Logging
import Metrics
import Persistence
import ServiceLifecycle
import ServiceSupport
import Shared

/// Consumes check-in and check-out events and turns each into one durable delivery
/// per webhook endpoint of its project. Offsets are committed only after the
/// deliveries are in Postgres, so an event is never acknowledged before it is safe;
/// a redelivered event meets the (endpoint, event) unique key and is dropped. A
/// record that is not an event goes, unchanged, to the events' dead-letter topic
/// (acknowledged before the offsets move on) and stops nothing.
package final class EventIntake: Service, Sendable {
    let consumer: KafkaConsumer
    let producer: KafkaProducer
    let deadLetterTopic: String
    let webhooks: WebhookStore
    let database: Database
    let dispatcher: WebhookDispatcher
    let logger: Logger

    let eventsCounter = Counter(label: "checkin_notifier_events_total")
    let malformedCounter = Counter(label: "checkin_notifier_events_malformed_total")
    let queuedCounter = Counter(label: "checkin_notifier_deliveries_queued_total")
    /// How long a batch of events takes to become delivery rows (and its offsets committed).
    let batchTimer = Metrics.Timer(label: "checkin_notifier_intake_batch_seconds")
    let metrics = NotifierMetrics()
    let health: ProcessingHealth
    let attemptTimeout: Duration

    init(
        consumer: KafkaConsumer, producer: KafkaProducer, deadLetterTopic: String, webhooks: WebhookStore,
        dispatcher: WebhookDispatcher, database: Database, readiness: Readiness? = nil, attemptTimeout: Duration = .seconds(30),
        logger: Logger
    ) {
        self.consumer = consumer
        self.producer = producer
        self.deadLetterTopic = deadLetterTopic
        self.webhooks = webhooks
        self.dispatcher = dispatcher
        self.database = database
        self.logger = logger
        self.health = ProcessingHealth(service: "notifier", readiness: readiness)
        self.attemptTimeout = attemptTimeout
    }

    package func run() async throws {
        let isolator = PoisonIsolator<Void>(
            attemptTimeout: attemptTimeout, health: health, logger: logger,
            attempt: { try await self.accept($0) },
            deadLetter: { try await self.producer.sendAll([self.deadLetter($0, reason: $1)]) },
            unhealthyComponent: { [database] in await database.isReachable(within: .seconds(2)) ? nil : "database" },
            signOfLife: { [consumer] in consumer.noteProgress() })
        for try await batch in consumer.batches.cancelOnGracefulShutdown() {
            // Retried while Postgres or the broker is away; a record that fails for any
            // other reason (one the database refuses) is isolated and dead-lettered.
            let started = ContinuousClock.now
            guard await isolator.settle(batch) != nil else { return }
            var offsets: [KafkaTopicPartition: Int64] = [:]
            for message in batch {
                let key = KafkaTopicPartition(topic: message.topic, partition: message.partition)
                offsets[key] = max(offsets[key] ?? 0, message.offset + 1)
            }
            do {
                try consumer.commit(offsets)
            } catch {
                // Not fatal: the events are queued; a redelivery is absorbed by the unique key.
                logger.warning("could not commit event offsets", metadata: ["error": "\(error)"])
            }
            batchTimer.record(duration: ContinuousClock.now - started)
        }
    }

    /// The original record on the events' dead-letter topic with why and whence (cut to fit
    /// when it would not, as the evaluator's dead letters are).
    func deadLetter(_ message: KafkaConsumerMessage, reason: String) -> KafkaRecord {
        DeadLetter(of: message, topic: deadLetterTopic, reason: reason, headerPrefix: Topics.deadLetterHeaderPrefix)
            .record(fittingIn: producer.maximumMessageBytes)
    }

    /// Turns a slice of event records into delivery rows, atomically: every row of the slice
    /// is queued, or none is. Records that are not events are dead-lettered first.
    func accept(_ batch: [KafkaConsumerMessage]) async throws {
        let decoder = WireJSON.decoder()
        var events: [(message: KafkaConsumerMessage, event: EventEnvelope)] = []
        var deadLetters: [KafkaRecord] = []
        for message in batch {
            do {
                events.append((message, try decoder.decode(EventEnvelope.self, from: Data(message.value))))
            } catch {
                logger.error(
                    "dead-lettering a record that is not an event",
                    metadata: ["topic": "\(message.topic)", "partition": "\(message.partition)", "offset": "\(message.offset)"])
                deadLetters.append(
                    deadLetter(message, reason: "not an event: \(DecodingErrorText.describe(error))"))
            }
        }
        // Read for every batch, not cached: an endpoint added a moment ago gets the events
        // that follow it, whichever notifier takes them. One indexed query per batch.
        // Disabled endpoints too: their deliveries wait, in order, until they are enabled again.
        let endpoints = try await webhooks.endpointIds(projectIds: Set(events.map { $0.event.projectId }))
        var deliveries: [NewDelivery] = []
        for (message, event) in events {
            eventsCounter.increment()
            let fixAcceptedAt = PipelineStage.date(
                headerValue: message.headers.first { $0.key == PipelineStage.fixAcceptedHeader }?.value)
            let payload = String(
                decoding: WebhookPayload.body(type: event.type, timestamp: event.time, event: message.value), as: UTF8.self)
            for endpointId in endpoints[event.projectId] ?? [] {
                deliveries.append(
                    NewDelivery(
                        endpointId: endpointId, projectId: event.projectId, eventId: event.eventId,
                        eventType: event.type.rawValue, deviceId: event.deviceId, eventTime: event.time,
                        sequence: event.sequence, payload: payload, fixAcceptedAt: fixAcceptedAt))
            }
        }
        try await producer.sendAll(deadLetters)
        if !deadLetters.isEmpty { malformedCounter.increment(by: deadLetters.count) }
        if !deadLetters.isEmpty { metrics.notAnEventDeadLetters.increment(by: deadLetters.count) }
        let (queued, claimed, dueUnclaimed) = try await webhooks.enqueue(
            deliveries, gapHold: dispatcher.configuration.gapHold, claim: dispatcher.queueClaim())
        await dispatcher.adopt(await dispatcher.opener.open(claimed))
        // Those that may go and were not taken (no room now) are for a claim to find.
        if dueUnclaimed > 0 { dispatcher.wake() }
        if queued > 0 { queuedCounter.increment(by: queued) }
        let now = Date()
        for (message, _) in events { PipelineStage.queue.record(from: message.timestamp, to: now) }
    }
}

/// The fields of an event the notifier acts on; the event itself goes to partners as received.
struct EventEnvelope: Decodable {
    struct Location: Decodable {
        var timestamp: Date
    }

    var eventId: String
    /// Absent on events from before events were numbered.
    var sequence: Int?
    var type: EventType
    var projectId: String
    var deviceId: String
    var location: Location
    var checkOutTime: Date?

    /// When it happened: the webhook's `timestamp`.
    var time: Date { type == .checkin ? location.timestamp : (checkOutTime ?? location.timestamp) }
}
