import BatchProcessing
import Kafka
import Logging
import Persistence
import ServiceLifecycle
import ServiceSupport
import Shared

/// The notifier's services, in start order. Stopping in reverse: the dispatcher
/// finishes its attempts, the intake its batch, then the consumer leaves the group.
/// The producer (for the events' dead-letter topic) is the caller's, like the evaluator's.
package struct Notifier: Sendable {
    package let intake: EventIntake
    package let consumer: KafkaConsumer
    package let dispatcher: WebhookDispatcher
    package let monitor: NotifierMonitor
    /// Deletes delivered deliveries past their retention; nil when they are kept for ever.
    package let retention: RetentionService?
    /// Moves the notifier to the group's next incarnation when its coordinator wedged it; nil when disabled.
    let groupRecovery: GroupRecovery?

    package init(
        configuration: NotifierConfiguration, consumerConfiguration: KafkaConsumerConfiguration, database: Database,
        producer: KafkaProducer, sealer: SecretSealer, hostResolver: any WebhookHostResolver = SystemHostResolver(),
        readiness: Readiness? = nil, logger: Logger
    ) throws {
        var consumerConfiguration = consumerConfiguration
        consumerConfiguration.groupId = configuration.groupId
        consumerConfiguration.topics = [configuration.topics.checkIns, configuration.topics.checkOuts]
        let webhooks = WebhookStore(database: database, logger: logger, sealer: sealer)
        let consumer = try KafkaConsumer(configuration: consumerConfiguration, rebalanceListener: nil, logger: logger)
        let webhookClient = try GuardedWebhookClient(
            policy: configuration.webhookURLPolicy, resolver: hostResolver, maximumIdlePerHost: configuration.idleConnectionsPerHost)
        let dispatcher = WebhookDispatcher(
            configuration: configuration, webhooks: webhooks, webhookClient: webhookClient, logger: logger)
        self.consumer = consumer
        self.dispatcher = dispatcher
        self.monitor = NotifierMonitor(
            bootstrapServers: consumerConfiguration.bootstrapServers, properties: consumerConfiguration.properties,
            group: configuration.groupId, topics: consumerConfiguration.topics,
            operations: OperationsStore(database: database, logger: logger),
            groups: ConsumerGroupStore(database: database, logger: logger), logger: logger)
        let deliveryRetention = configuration.deliveryRetention
        self.retention =
            deliveryRetention > .zero
            ? RetentionService(
                name: "deliveries", metric: "checkin_notifier_deliveries_purged_total", logger: logger,
                purge: { now in try await webhooks.purgeDelivered(olderThan: deliveryRetention, now: now) })
            : nil
        let (bootstrapServers, properties, topics) =
            (consumerConfiguration.bootstrapServers, consumerConfiguration.properties, consumerConfiguration.topics)
        self.groupRecovery =
            configuration.rebalanceLimit > .zero
            ? GroupRecovery(
                service: "notifier", consumer: consumer, group: configuration.groupId,
                groups: ConsumerGroupStore(database: database, logger: logger), stuckAfter: configuration.rebalanceLimit,
                readiness: readiness, logger: logger,
                committedOffsets: { groupId in
                    await Self.committedOffsets(
                        of: groupId, topics: topics, bootstrapServers: bootstrapServers, properties: properties, logger: logger)
                })
            : nil
        self.intake = EventIntake(
            consumer: consumer, producer: producer, deadLetterTopic: configuration.topics.eventsDeadLetter, webhooks: webhooks,
            dispatcher: dispatcher, database: database, readiness: readiness, logger: logger)
    }

    package var services: [any Service] {
        [consumer, intake, dispatcher, monitor] + (retention.map { [$0] } ?? []) + (groupRecovery.map { [$0] } ?? [])
    }

    /// What a group committed on the events topics, so that its next incarnation starts there
    /// rather than at the topics' start; empty if the broker does not say (events then come
    /// again, and the (endpoint, event) key drops the repeats).
    static func committedOffsets(
        of groupId: String, topics: [String], bootstrapServers: String, properties: [String: String], logger: Logger
    ) async -> [KafkaTopicPartition: Int64] {
        var result: [KafkaTopicPartition: Int64] = [:]
        do {
            let reader = try KafkaOffsetReader(
                bootstrapServers: bootstrapServers, group: groupId, properties: properties, logger: logger)
            for topic in topics {
                let partitions = try await reader.partitions(of: topic)
                for (partition, offset) in try await reader.committedOffsets(topic: topic, partitions: partitions) {
                    result[KafkaTopicPartition(topic: topic, partition: partition)] = offset
                }
            }
        } catch {
            logger.warning("could not read the group's committed offsets", metadata: ["group": "\(groupId)", "error": "\(error)"])
        }
        return result
    }
}
