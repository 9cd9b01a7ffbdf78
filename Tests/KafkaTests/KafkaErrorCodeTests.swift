import Kafka
import KafkaTesting
import Testing

/// Callers tell Kafka errors apart by ``KafkaError/code``, never by text: each named code
/// must be the librdkafka error of that name, and an error librdkafka reports must reach
/// the caller carrying it.
@Suite("Kafka error codes", .timeLimit(.minutes(1)))
struct KafkaErrorCodeTests {
    static let named: [(code: KafkaError.Code, librdkafkaName: String)] = [
        (.messageSizeTooLarge, "MSG_SIZE_TOO_LARGE"),
        (.invalidRecord, "INVALID_RECORD"),
        (.recordListTooLarge, "RECORD_LIST_TOO_LARGE"),
        (.invalidMessage, "INVALID_MSG"),
        (.invalidMessageSize, "INVALID_MSG_SIZE"),
        (.invalidArgument, "_INVALID_ARG"),
        (.badMessage, "_BAD_MSG"),
        (.invalidRequiredAcks, "INVALID_REQUIRED_ACKS"),
        (.unknownTopicOrPartition, "UNKNOWN_TOPIC_OR_PART"),
        (.unknownPartition, "_UNKNOWN_PARTITION"),
        (.topicAuthorizationFailed, "TOPIC_AUTHORIZATION_FAILED"),
        (.leaderNotAvailable, "LEADER_NOT_AVAILABLE"),
        (.notLeaderForPartition, "NOT_LEADER_FOR_PARTITION"),
        (.messageTimedOut, "_MSG_TIMED_OUT"),
        (.transport, "_TRANSPORT"),
        (.fatal, "_FATAL"),
    ]

    @Test("each named code is the librdkafka error of that name")
    func namesAreLibrdkafkas() {
        for (code, name) in Self.named {
            #expect(code.description == name)
        }
    }

    @Test("named codes are all different")
    func codesAreDistinct() {
        #expect(Set(Self.named.map(\.code)).count == Self.named.count)
    }

    @Test("an error is told by its code, whatever its text says")
    func errorsAreToldByCode() {
        let timedOut = KafkaError(message: "delivery failed", code: .messageTimedOut, reason: "MSG_SIZE_TOO_LARGE")
        #expect(timedOut.code == .messageTimedOut)
        #expect(timedOut.code != .messageSizeTooLarge)
        #expect(KafkaError(message: "the client has been shut down").code == nil)
    }

    @Test("a record larger than the producer takes fails with messageSizeTooLarge")
    func recordTooLarge() async throws {
        let cluster = try KafkaMockCluster(brokers: 1, logger: KafkaTestSupport.logger)
        let topic = KafkaTestSupport.uniqueName("too-large")
        try cluster.createTopic(topic, partitions: 1)
        let producer = try KafkaProducer(
            configuration: KafkaProducerConfiguration(
                bootstrapServers: cluster.bootstrapServers, clientId: "code-tests", properties: ["message.max.bytes": "1000"]),
            logger: KafkaTestSupport.logger)
        try await withServicesRunning([producer]) {
            let error = await #expect(throws: KafkaError.self) {
                try await producer.send(KafkaRecord(topic: topic, value: [UInt8](repeating: 7, count: 5000)))
            }
            #expect(error?.code == .messageSizeTooLarge)
        }
    }

    @Test("a topic the broker does not know fails with unknownTopicOrPartition")
    func unknownTopic() async throws {
        let cluster = try KafkaMockCluster(brokers: 1, logger: KafkaTestSupport.logger)
        let reader = try KafkaOffsetReader(bootstrapServers: cluster.bootstrapServers, logger: KafkaTestSupport.logger)
        let error = await #expect(throws: KafkaError.self) {
            try await reader.partitions(of: KafkaTestSupport.uniqueName("missing"))
        }
        #expect(error?.code == .unknownTopicOrPartition)
    }
}
