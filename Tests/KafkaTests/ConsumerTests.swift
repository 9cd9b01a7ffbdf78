import Kafka
import KafkaTesting
import Synchronization
import Testing

@Suite("Consumer against the in-process mock cluster", .timeLimit(.minutes(1)))
struct ConsumerTests {
    let cluster: KafkaMockCluster

    init() throws {
        cluster = try KafkaMockCluster(brokers: 1, logger: KafkaTestSupport.logger)
    }

    func produce(_ count: Int, to topic: String, partition: Int32? = nil) async throws {
        let producer = try KafkaProducer(
            configuration: KafkaProducerConfiguration(bootstrapServers: cluster.bootstrapServers),
            logger: KafkaTestSupport.logger)
        try await withServicesRunning([producer]) {
            let records = (0..<count).map {
                KafkaRecord(
                    topic: topic, key: Array("key-\($0 % 7)".utf8), value: Array("\($0)".utf8),
                    headers: [KafkaHeader(key: "index", value: Array("\($0)".utf8)), KafkaHeader(key: "none", value: nil)],
                    partition: partition)
            }
            for result in await producer.send(records) { _ = try result.get() }
        }
    }

    func makeConsumer(
        topic: String, group: String, maxBatchSize: Int = 500, listener: (any KafkaRebalanceListener)? = nil,
        strategy: KafkaConsumerConfiguration.AssignmentStrategy = .range, commitInterval: Duration? = nil
    ) throws -> KafkaConsumer {
        var configuration = KafkaTestSupport.consumerConfiguration(
            bootstrapServers: cluster.bootstrapServers, groupId: group, topics: [topic])
        configuration.maxBatchSize = maxBatchSize
        configuration.assignmentStrategy = strategy
        configuration.commitInterval = commitInterval
        return try KafkaConsumer(configuration: configuration, rebalanceListener: listener, logger: KafkaTestSupport.logger)
    }

    /// The offsets the next member of `group` reads first (from the group's committed offset), `count` of them.
    func offsetsReadByANewMember(of group: String, topic: String, count: Int) async throws -> [Int64] {
        let member = try makeConsumer(topic: topic, group: group)
        let received = ReceivedMessages(member)
        return try await withServicesRunning([member]) {
            try await received.waitFor(count: count)
        }.map(\.offset)
    }

    @Test("receives what was produced, in order per partition, in bounded batches")
    func receivesProduced() async throws {
        let topic = KafkaTestSupport.uniqueName("consume")
        try cluster.createTopic(topic, partitions: 3)
        try await produce(300, to: topic)
        let consumer = try makeConsumer(topic: topic, group: KafkaTestSupport.uniqueName("group"), maxBatchSize: 40)
        let received = ReceivedMessages(consumer)
        let messages = try await withServicesRunning([consumer]) {
            let messages = try await received.waitFor(count: 300)
            #expect(consumer.assignment.count == 3)
            return messages
        }
        await received.finished()
        #expect(Set(messages.map { String(decoding: $0.value, as: UTF8.self) }) == Set((0..<300).map { "\($0)" }))
        #expect(received.batchSizes.allSatisfy { $0 > 0 && $0 <= 40 })
        for partition in Set(messages.map(\.partition)) {
            let offsets = messages.filter { $0.partition == partition }.map(\.offset)
            #expect(offsets == Array(0..<Int64(offsets.count)))
        }
        let first = try #require(messages.first)
        #expect(first.headers.first { $0.key == "index" }?.value == first.value)
        #expect(first.headers.contains(KafkaHeader(key: "none", value: nil)))
        #expect(first.key != nil)
        #expect(first.timestamp != nil)
        #expect(consumer.assignment.isEmpty)
    }

    /// Eager strategies assign with `rd_kafka_assign`, cooperative-sticky with `rd_kafka_incremental_assign`.
    @Test(
        "the rebalance listener's offsets are where reading starts",
        arguments: [KafkaConsumerConfiguration.AssignmentStrategy.range, .roundRobin, .cooperativeSticky])
    func listenerSeek(strategy: KafkaConsumerConfiguration.AssignmentStrategy) async throws {
        let topic = KafkaTestSupport.uniqueName("seek")
        try cluster.createTopic(topic, partitions: 1)
        try await produce(10, to: topic)
        let listener = RecordingListener(startAt: 7)
        let consumer = try makeConsumer(
            topic: topic, group: KafkaTestSupport.uniqueName("group"), listener: listener, strategy: strategy)
        let received = ReceivedMessages(consumer)
        let messages = try await withServicesRunning([consumer]) {
            try await received.waitFor(count: 3)
        }
        #expect(messages.map(\.offset) == [7, 8, 9])
        let partition = KafkaTopicPartition(topic: topic, partition: 0)
        #expect(listener.assigned == [[partition]])
        // Closing the consumer revokes what it held.
        #expect(listener.revoked == [[partition]])
    }

    @Test("a new member of the group resumes after the last committed offset")
    func resumesAfterCommit() async throws {
        let topic = KafkaTestSupport.uniqueName("commit")
        let group = KafkaTestSupport.uniqueName("group")
        try cluster.createTopic(topic, partitions: 1)
        try await produce(10, to: topic)
        let partition = KafkaTopicPartition(topic: topic, partition: 0)

        let first = try makeConsumer(topic: topic, group: group)
        let firstReceived = ReceivedMessages(first)
        try await withServicesRunning([first]) {
            _ = try await firstReceived.waitFor(count: 10)
            // Processed offsets 0...5 only.
            try first.commit([partition: 6])
        }

        #expect(try await offsetsReadByANewMember(of: group, topic: topic, count: 4) == [6, 7, 8, 9])
    }

    /// With a commit interval, commits wait for it (merged, the latest of each partition),
    /// and what is waiting goes to the group when the consumer closes.
    @Test("deferred commits wait for their interval and go when the consumer closes")
    func deferredCommitsGoOnClose() async throws {
        let topic = KafkaTestSupport.uniqueName("deferred")
        let group = KafkaTestSupport.uniqueName("group")
        try cluster.createTopic(topic, partitions: 1)
        try await produce(10, to: topic)
        let partition = KafkaTopicPartition(topic: topic, partition: 0)
        let reader = try KafkaOffsetReader(
            bootstrapServers: cluster.bootstrapServers, group: group, logger: KafkaTestSupport.logger)

        let first = try makeConsumer(topic: topic, group: group, commitInterval: .seconds(60))
        let firstReceived = ReceivedMessages(first)
        try await withServicesRunning([first]) {
            _ = try await firstReceived.waitFor(count: 10)
            try first.commit([partition: 6])
            try first.commit([partition: 4])
            // A minute's interval: nothing is sent while the consumer runs.
            try await Task.sleep(for: .seconds(1))
            #expect(try await reader.committedOffsets(topic: topic, partitions: [0])[0] == nil)
        }
        #expect(try await reader.committedOffsets(topic: topic, partitions: [0])[0] == 6)

        #expect(try await offsetsReadByANewMember(of: group, topic: topic, count: 4) == [6, 7, 8, 9])
    }

    /// The reader holds its first batch three poll intervals long while more wait: the
    /// consumer pauses fetching but goes on polling, so the member stays in the group and
    /// every record arrives once, in order, with no revocation. Records produced meanwhile
    /// are counted by the broker's high watermark, not by the one of the last fetch.
    @Test("an application slower than max.poll.interval keeps its partitions and reads each record once")
    func slowApplicationKeepsItsPartitions() async throws {
        let topic = KafkaTestSupport.uniqueName("slow")
        try cluster.createTopic(topic, partitions: 1)
        try await produce(60, to: topic)
        let listener = RecordingListener(startAt: nil)
        let consumer = try makeShortPollConsumer(topic: topic, listener: listener, maxBatchSize: 5)
        let partition = KafkaTopicPartition(topic: topic, partition: 0)
        let offsets = try await withServicesRunning([consumer]) {
            var offsets: [Int64] = []
            var iterator = consumer.batches.makeAsyncIterator()
            while offsets.count < 70, let batch = try await iterator.next() {
                if offsets.isEmpty {
                    try await working(for: .seconds(2), consumer)
                    try await produce(10, to: topic)
                    try await working(for: .seconds(7), consumer)
                    #expect(try await consumer.highWatermarks(of: [partition]) == [partition: 70])
                    #expect((consumer.cachedWatermarks(of: partition)?.high ?? 0) < 70)
                }
                offsets += batch.map(\.offset)
            }
            return offsets
        }
        #expect(offsets == Array(0..<70))
        #expect(listener.assigned.count == 1)
        // Only the close revokes.
        #expect(listener.revoked.count == 1)
    }

    /// A consumer whose group allows 3 s between polls, so that tests can outlast it.
    func makeShortPollConsumer(
        topic: String, listener: RecordingListener, maxBatchSize: Int = 500
    ) throws -> KafkaConsumer {
        var configuration = KafkaTestSupport.consumerConfiguration(
            bootstrapServers: cluster.bootstrapServers, groupId: KafkaTestSupport.uniqueName("group"), topics: [topic])
        configuration.maxBatchSize = maxBatchSize
        configuration.sessionTimeout = .seconds(3)
        configuration.heartbeatInterval = .milliseconds(500)
        configuration.maxPollInterval = .seconds(3)
        return try KafkaConsumer(configuration: configuration, rebalanceListener: listener, logger: KafkaTestSupport.logger)
    }

    /// An application at work on its batch, saying so every half second.
    func working(for duration: Duration, _ consumer: KafkaConsumer) async throws {
        let end = ContinuousClock.now + duration
        while ContinuousClock.now < end {
            consumer.noteProgress()
            try await Task.sleep(for: .milliseconds(500))
        }
    }

    /// The reader holds its first batch for three poll intervals and says nothing: it is
    /// taken as hung, and the group takes its partition back (read again from the start,
    /// as nothing was committed).
    @Test("an application that shows no sign of life loses its partitions")
    func hungApplicationLosesItsPartitions() async throws {
        let topic = KafkaTestSupport.uniqueName("hung")
        try cluster.createTopic(topic, partitions: 1)
        try await produce(60, to: topic)
        let listener = RecordingListener(startAt: nil)
        let consumer = try makeShortPollConsumer(topic: topic, listener: listener, maxBatchSize: 5)
        try await withServicesRunning([consumer]) {
            var iterator = consumer.batches.makeAsyncIterator()
            _ = try await iterator.next()
            try await Task.sleep(for: .seconds(9))
            // Reading again, it rejoins the group and gets the partition anew.
            var offsets: [Int64] = []
            while listener.assigned.count < 2, let batch = try await iterator.next() { offsets += batch.map(\.offset) }
            while offsets.count < 60, let batch = try await iterator.next() { offsets += batch.map(\.offset) }
            #expect(offsets.filter { $0 == 5 }.count == 2, "offset 5 is read again after the partition came back: \(offsets)")
        }
        #expect(listener.assigned.count == 2)
        #expect(listener.revoked.count == 2)
    }

    /// The listener takes twice the poll interval to say where the partition starts (a
    /// database slow to answer): the partition is assigned once, and reading starts where
    /// the listener said. (librdkafka does not count a callback inside a blocking poll
    /// against the interval, so this also held when the listener ran inside the callback.)
    @Test("a listener slower than max.poll.interval delays the partition, not the group")
    func slowListener() async throws {
        let topic = KafkaTestSupport.uniqueName("slow-listener")
        try cluster.createTopic(topic, partitions: 1)
        try await produce(10, to: topic)
        let listener = RecordingListener(startAt: 4, delay: .seconds(7))
        let consumer = try makeShortPollConsumer(topic: topic, listener: listener)
        let received = ReceivedMessages(consumer)
        let messages = try await withServicesRunning([consumer]) {
            try await received.waitFor(count: 6, within: .seconds(40))
        }
        #expect(messages.map(\.offset) == Array(4..<10))
        #expect(listener.assigned.count == 1)
        #expect(listener.revoked.count == 1)
    }

    @Test("a failing rebalance listener stops the consumer with its error")
    func listenerFailure() async throws {
        let topic = KafkaTestSupport.uniqueName("failing")
        try cluster.createTopic(topic, partitions: 1)
        let consumer = try makeConsumer(
            topic: topic, group: KafkaTestSupport.uniqueName("group"), listener: FailingListener())
        let received = ReceivedMessages(consumer)
        await #expect(throws: KafkaError.self) {
            try await consumer.run()
        }
        await received.finished()
        #expect(received.all.isEmpty)
    }

    @Test("commit after the consumer closed fails")
    func commitAfterClose() async throws {
        let topic = KafkaTestSupport.uniqueName("closed")
        try cluster.createTopic(topic, partitions: 1)
        let consumer = try makeConsumer(topic: topic, group: KafkaTestSupport.uniqueName("group"))
        try await withServicesRunning([consumer]) {}
        #expect(throws: KafkaError.self) {
            try consumer.commit([KafkaTopicPartition(topic: topic, partition: 0): 1])
        }
    }
}

/// Starts every partition at a fixed offset and records the calls.
final class RecordingListener: KafkaRebalanceListener {
    private let calls = Mutex<(assigned: [[KafkaTopicPartition]], revoked: [[KafkaTopicPartition]])>(([], []))
    let startAt: Int64?
    /// How long each assignment takes.
    let delay: Duration

    init(startAt: Int64?, delay: Duration = .zero) {
        self.startAt = startAt
        self.delay = delay
    }

    var assigned: [[KafkaTopicPartition]] { calls.withLock { $0.assigned } }
    var revoked: [[KafkaTopicPartition]] { calls.withLock { $0.revoked } }

    func partitionsAssigned(_ partitions: [KafkaTopicPartition]) async throws -> [KafkaTopicPartition: Int64] {
        calls.withLock { $0.assigned.append(partitions) }
        if delay > .zero { try await Task.sleep(for: delay) }
        guard let startAt else { return [:] }
        return Dictionary(uniqueKeysWithValues: partitions.map { ($0, startAt) })
    }

    func partitionsRevoked(_ partitions: [KafkaTopicPartition]) async {
        calls.withLock { $0.revoked.append(partitions) }
    }
}

struct FailingListener: KafkaRebalanceListener {
    func partitionsAssigned(_ partitions: [KafkaTopicPartition]) async throws -> [KafkaTopicPartition: Int64] {
        throw KafkaError(message: "the offset store is unavailable")
    }

    func partitionsRevoked(_ partitions: [KafkaTopicPartition]) async {}
}
