import Foundation
import Kafka
import KafkaTesting
import Testing

@Suite("Offset reader against the in-process mock cluster", .timeLimit(.minutes(1)))
struct OffsetReaderTests {
    let cluster: KafkaMockCluster

    init() throws {
        cluster = try KafkaMockCluster(brokers: 1, logger: KafkaTestSupport.logger)
    }

    @Test("partitions, end offsets and a record's timestamp follow what was produced")
    func readsWhatWasProduced() async throws {
        let topic = KafkaTestSupport.uniqueName("offsets")
        try cluster.createTopic(topic, partitions: 2)
        let producer = try KafkaProducer(
            configuration: KafkaProducerConfiguration(bootstrapServers: cluster.bootstrapServers, clientId: "offset-tests"),
            logger: KafkaTestSupport.logger)
        let before = Date().addingTimeInterval(-1)
        try await withServicesRunning([producer]) {
            try await producer.sendAll((0..<3).map { KafkaRecord(topic: topic, value: [UInt8($0)], partition: 1) })
        }
        let reader = try KafkaOffsetReader(bootstrapServers: cluster.bootstrapServers, logger: KafkaTestSupport.logger)

        #expect(try await reader.partitions(of: topic) == [0, 1])
        let ends = try await reader.watermarks(topic: topic, partitions: [0, 1])
        #expect(ends[0] == KafkaWatermarks(low: 0, high: 0))
        #expect(ends[1] == KafkaWatermarks(low: 0, high: 3))

        let stamp = try #require(try await reader.timestamp(topic: topic, partition: 1, offset: 1))
        #expect(stamp >= before && stamp <= Date().addingTimeInterval(1))
        #expect(try await reader.timestamp(topic: topic, partition: 0, offset: 0) == nil)
        // Offsets by time are not answered by the mock; StatusCommandTests reads them from a real broker.
    }

    @Test("a group's lag counts from its committed offsets, and from the start without any")
    func lagOfAGroup() async throws {
        let topic = KafkaTestSupport.uniqueName("lag")
        try cluster.createTopic(topic, partitions: 1)
        let producer = try KafkaProducer(
            configuration: KafkaProducerConfiguration(bootstrapServers: cluster.bootstrapServers, clientId: "offset-tests"),
            logger: KafkaTestSupport.logger)
        try await withServicesRunning([producer]) {
            try await producer.sendAll((0..<5).map { KafkaRecord(topic: topic, value: [UInt8($0)], partition: 0) })
        }
        let reader = try KafkaOffsetReader(
            bootstrapServers: cluster.bootstrapServers, group: KafkaTestSupport.uniqueName("group"),
            logger: KafkaTestSupport.logger)
        let nothingCommitted = try await reader.lag(topic: topic) { try await reader.committedOffsets(topic: topic, partitions: $0) }
        #expect(nothingCommitted.map(\.records) == [5])
        let someProcessed = try await reader.lag(topic: topic) { _ in [0: 2] }
        #expect(someProcessed.map(\.records) == [3])
        #expect(someProcessed.first?.firstUnprocessedOffset == 2)
    }
}
