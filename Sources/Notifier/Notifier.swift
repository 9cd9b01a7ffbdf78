import Kafka
import Logging
import Persistence
import ServiceLifecycle

/// The notifier's services, in start order. Stopping in reverse: the dispatcher
/// finishes its attempts, the intake its batch, then the consumer leaves the group.
/// The producer (for the events' dead-letter topic) is the caller's, like the evaluator's.
public struct Notifier: Sendable {
    public let intake: EventIntake
    public let consumer: KafkaConsumer
    public let dispatcher: WebhookDispatcher

    public init(
        configuration: NotifierConfiguration, consumerConfiguration: KafkaConsumerConfiguration, database: Database,
        producer: KafkaProducer, logger: Logger
    ) throws {
        var consumerConfiguration = consumerConfiguration
        consumerConfiguration.groupId = configuration.groupId
        consumerConfiguration.topics = [configuration.topics.checkIns, configuration.topics.checkOuts]
        let webhooks = WebhookStore(database: database, logger: logger)
        let consumer = try KafkaConsumer(configuration: consumerConfiguration, rebalanceListener: nil, logger: logger)
        let dispatcher = WebhookDispatcher(configuration: configuration, webhooks: webhooks, logger: logger)
        self.consumer = consumer
        self.dispatcher = dispatcher
        self.intake = EventIntake(
            consumer: consumer, producer: producer, deadLetterTopic: configuration.topics.eventsDeadLetter, webhooks: webhooks,
            dispatcher: dispatcher, logger: logger)
    }

    public var services: [any Service] { [consumer, intake, dispatcher] }
}
