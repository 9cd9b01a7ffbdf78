import Kafka
import KafkaTesting

/// What the tests of the Kafka client need of the real broker that the scripts started.
enum KafkaIntegration {
    static func consumerConfiguration(groupId: String, topics: [String]) -> KafkaConsumerConfiguration {
        KafkaTestSupport.consumerConfiguration(bootstrapServers: TestEnvironment.kafkaBrokers, groupId: groupId, topics: topics)
    }

    static func makeProducer() throws -> KafkaProducer {
        try KafkaProducer(
            configuration: KafkaProducerConfiguration(bootstrapServers: TestEnvironment.kafkaBrokers, clientId: "kafka-it"),
            logger: KafkaTestSupport.logger)
    }
}
