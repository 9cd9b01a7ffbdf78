import Kafka
import KafkaTesting
import Testing

@Suite("Producer against the in-process mock cluster", .timeLimit(.minutes(1)))
struct ProducerTests {
    let cluster: KafkaMockCluster

    init() throws {
        cluster = try KafkaMockCluster(brokers: 1, logger: KafkaTestSupport.logger)
    }

    func makeProducer(messageTimeout: Duration = .seconds(10)) throws -> KafkaProducer {
        try KafkaProducer(
            configuration: KafkaProducerConfiguration(
                bootstrapServers: cluster.bootstrapServers, clientId: "producer-tests", messageTimeout: messageTimeout),
            logger: KafkaTestSupport.logger)
    }

    @Test("send resolves with where the broker stored the record")
    func roundTrip() async throws {
        let topic = KafkaTestSupport.uniqueName("produce")
        try cluster.createTopic(topic, partitions: 3)
        let producer = try makeProducer()
        try await withServicesRunning([producer]) {
            let first = try await producer.send(KafkaRecord(topic: topic, key: Array("device-1".utf8), value: [1]))
            let second = try await producer.send(KafkaRecord(topic: topic, key: Array("device-1".utf8), value: [2]))
            #expect(first.topic == topic)
            // Same key, same partition, next offset: what keeps per-key order.
            #expect(second.partition == first.partition)
            #expect(second.offset == first.offset + 1)
            let explicit = try await producer.send(KafkaRecord(topic: topic, value: [], partition: 2))
            #expect(explicit.partition == 2)
        }
    }

    @Test("a batch send reports every record, in order")
    func batch() async throws {
        let topic = KafkaTestSupport.uniqueName("batch")
        try cluster.createTopic(topic, partitions: 4)
        let producer = try makeProducer()
        let results = try await withServicesRunning([producer]) {
            await producer.send(
                (0..<500).map {
                    KafkaRecord(
                        topic: topic, key: Array("key-\($0 % 10)".utf8), value: Array("value-\($0)".utf8),
                        headers: [KafkaHeader(key: "n", value: Array("\($0)".utf8))])
                })
        }
        let receipts = try results.map { try $0.get() }
        #expect(receipts.count == 500)
        // Within a partition, offsets follow send order.
        for partition in Set(receipts.map(\.partition)) {
            let offsets = receipts.filter { $0.partition == partition }.map(\.offset)
            #expect(offsets == offsets.sorted())
            #expect(Set(offsets).count == offsets.count)
        }
    }

    @Test("a full local queue is waited out, nothing is dropped")
    func backpressure() async throws {
        let topic = KafkaTestSupport.uniqueName("full")
        try cluster.createTopic(topic, partitions: 2)
        let producer = try KafkaProducer(
            configuration: KafkaProducerConfiguration(
                bootstrapServers: cluster.bootstrapServers, properties: ["queue.buffering.max.messages": "10"]),
            logger: KafkaTestSupport.logger)
        let results = try await withServicesRunning([producer]) {
            await producer.send((0..<300).map { KafkaRecord(topic: topic, value: Array("\($0)".utf8)) })
        }
        #expect(try results.map { try $0.get() }.count == 300)
    }

    @Test("a record the broker rejects fails its send with librdkafka's error code")
    func injectedError() async throws {
        let topic = KafkaTestSupport.uniqueName("rejected")
        try cluster.createTopic(topic, partitions: 1)
        let producer = try makeProducer()
        try await withServicesRunning([producer]) {
            _ = try await producer.send(KafkaRecord(topic: topic, value: [0]))
            cluster.failProduceRequests(.topicAuthorizationFailed)
            let error = await #expect(throws: KafkaError.self) {
                try await producer.send(KafkaRecord(topic: topic, value: [1]))
            }
            #expect(error?.code == .topicAuthorizationFailed)
            #expect(error?.description.contains(topic) == true)
        }
    }

    @Test("retriable broker errors are retried, not reported")
    func retriableError() async throws {
        let topic = KafkaTestSupport.uniqueName("retried")
        try cluster.createTopic(topic, partitions: 1)
        let producer = try makeProducer()
        try await withServicesRunning([producer]) {
            _ = try await producer.send(KafkaRecord(topic: topic, value: [0]))
            cluster.failProduceRequests(.notLeaderForPartition, count: 2)
            let receipt = try await producer.send(KafkaRecord(topic: topic, value: [1]))
            #expect(receipt.offset == 1)
        }
    }

    @Test("a partition the topic does not have fails at once")
    func unknownPartition() async throws {
        let topic = KafkaTestSupport.uniqueName("partitions")
        try cluster.createTopic(topic, partitions: 2)
        let producer = try makeProducer()
        try await withServicesRunning([producer]) {
            _ = try await producer.send(KafkaRecord(topic: topic, value: [0], partition: 0))
            let error = await #expect(throws: KafkaError.self) {
                try await producer.send(KafkaRecord(topic: topic, value: [1], partition: 7))
            }
            #expect(error?.code == .unknownPartition)
        }
    }

    @Test("records the broker never acknowledges fail after the message timeout")
    func brokerDown() async throws {
        let topic = KafkaTestSupport.uniqueName("down")
        try cluster.createTopic(topic, partitions: 1)
        let producer = try makeProducer(messageTimeout: .seconds(2))
        try await withServicesRunning([producer]) {
            _ = try await producer.send(KafkaRecord(topic: topic, value: [0]))
            cluster.setBroker(1, up: false)
            let started = ContinuousClock.now
            let error = await #expect(throws: KafkaError.self) {
                try await producer.send(KafkaRecord(topic: topic, value: [1]))
            }
            #expect(error?.code == .messageTimedOut)
            // The 2 s message timeout ends the wait; the bound only tells a timeout from a hang
            // and leaves room for a loaded machine.
            #expect(ContinuousClock.now - started < .seconds(60))
            // The broker stays down: this test's cluster is its own, and bringing it up binds its
            // old port again, which another socket of a busy test run may hold by then (librdkafka
            // aborts the process when it cannot).
        }
    }

    @Test("send after shutdown fails instead of hanging")
    func sendAfterShutdown() async throws {
        let topic = KafkaTestSupport.uniqueName("closed")
        try cluster.createTopic(topic, partitions: 1)
        let producer = try makeProducer()
        try await withServicesRunning([producer]) {
            _ = try await producer.send(KafkaRecord(topic: topic, value: [0]))
        }
        await #expect(throws: KafkaError.self) {
            try await producer.send(KafkaRecord(topic: topic, value: [1]))
        }
    }
}
