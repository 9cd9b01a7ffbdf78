import Foundation
import Kafka
import KafkaTesting
import Synchronization
import Testing

@Suite("Kafka client against the real broker", .timeLimit(.minutes(2)))
struct KafkaBrokerTests {
    @Test("records produced are consumed with keys, values and headers intact")
    func roundTrip() async throws {
        let topic = KafkaTestSupport.uniqueName("kafka-it-roundtrip")
        let brokers = TestEnvironment.kafkaBrokers
        try await KafkaAdmin.waitUntilReachable(bootstrapServers: brokers, timeout: .seconds(10), logger: KafkaTestSupport.logger)
        try await KafkaAdmin.createTopics(
            [(name: topic, partitions: 4)], bootstrapServers: brokers, timeout: .seconds(10), logger: KafkaTestSupport.logger)
        // An existing topic is fine.
        try await KafkaAdmin.createTopics(
            [(name: topic, partitions: 4)], bootstrapServers: brokers, timeout: .seconds(10), logger: KafkaTestSupport.logger)

        let producer = try KafkaIntegration.makeProducer()
        let receipts = try await withServicesRunning([producer]) {
            try await producer.send(
                (0..<200).map {
                    KafkaRecord(
                        topic: topic, key: Array("device-\($0 % 13)".utf8), value: Array("\($0)".utf8),
                        headers: [KafkaHeader(key: "n", value: Array("\($0)".utf8))])
                }
            ).map { try $0.get() }
        }
        // Same key, same partition.
        #expect(receipts[0].partition == receipts[13].partition)

        let consumer = try KafkaConsumer(
            configuration: KafkaIntegration.consumerConfiguration(groupId: KafkaTestSupport.uniqueName("g"), topics: [topic]),
            logger: KafkaTestSupport.logger)
        let received = ReceivedMessages(consumer)
        let messages = try await withServicesRunning([consumer]) { try await received.waitFor(count: 200) }
        #expect(received.values == Set((0..<200).map { "\($0)" }))
        for message in messages {
            #expect(message.headers == [KafkaHeader(key: "n", value: message.value)])
            let index = Int(String(decoding: message.value, as: UTF8.self))!
            #expect(message.key == Array("device-\(index % 13)".utf8))
            #expect(message.partition == receipts[index].partition && message.offset == receipts[index].offset)
        }
    }

    @Test("two members split the partitions; the one left takes them all over")
    func groupSplitAndTakeover() async throws {
        let topic = KafkaTestSupport.uniqueName("kafka-it-group")
        let group = KafkaTestSupport.uniqueName("g")
        let partitions = 8
        try await KafkaAdmin.createTopics(
            [(name: topic, partitions: Int32(partitions))], bootstrapServers: TestEnvironment.kafkaBrokers,
            timeout: .seconds(10), logger: KafkaTestSupport.logger)
        let all = Set((0..<Int32(partitions)).map { KafkaTopicPartition(topic: topic, partition: $0) })
        let producer = try KafkaIntegration.makeProducer()
        let first = try KafkaConsumer(
            configuration: KafkaIntegration.consumerConfiguration(groupId: group, topics: [topic]), logger: KafkaTestSupport.logger)
        let second = try KafkaConsumer(
            configuration: KafkaIntegration.consumerConfiguration(groupId: group, topics: [topic]), logger: KafkaTestSupport.logger)
        let firstReceived = ReceivedMessages(first)
        let secondReceived = ReceivedMessages(second)

        func produce(_ range: Range<Int>) async throws {
            for result in await producer.send(
                range.map { KafkaRecord(topic: topic, key: Array("k\($0)".utf8), value: Array("\($0)".utf8)) })
            {
                _ = try result.get()
            }
        }

        try await withServicesRunning([producer, first]) {
            let joined = try await KafkaTestSupport.waitUntil("the first member holds every partition") { first.assignment == all }
            try await withServicesRunning([second]) {
                let split = try await KafkaTestSupport.waitUntil("both members hold partitions") {
                    let a = first.assignment
                    let b = second.assignment
                    return !a.isEmpty && !b.isEmpty && a.isDisjoint(with: b) && a.union(b) == all
                }
                try await produce(0..<100)
                try await KafkaTestSupport.waitUntil("both members together receive everything") {
                    firstReceived.values.union(secondReceived.values).isSuperset(of: (0..<100).map { "\($0)" })
                }
                #expect(!secondReceived.all.isEmpty)
                print("kafka-it: first join \(joined), split after second joined \(split)")
            }
            // The second member left the group on shutdown.
            let takeover = try await KafkaTestSupport.waitUntil("the first member takes every partition back") { first.assignment == all }
            print("kafka-it: takeover after leave \(takeover)")
            try await produce(100..<200)
            try await KafkaTestSupport.waitUntil("the first member receives what was produced after") {
                firstReceived.values.isSuperset(of: (100..<200).map { "\($0)" })
            }
        }
    }

    /// Both topics with a backlog larger than one fetch response holds of each, and an
    /// application that keeps each batch longer than the poller waits before it pauses
    /// fetching. The broker answers each fetch with one topic's records before the other's:
    /// what was fetched ahead must outlive the pause and go out by record time, or the topic
    /// behind is fetched and dropped again at every pause and not read while the other has
    /// a batch waiting (as check-outs were, behind check-ins, in a notifier far behind).
    @Test("an application slower than its fetches reads every topic it subscribed to, not only the first of each fetch")
    func slowApplicationReadsEveryTopic() async throws {
        let brokers = TestEnvironment.kafkaBrokers
        let topics = [KafkaTestSupport.uniqueName("kafka-it-a"), KafkaTestSupport.uniqueName("kafka-it-b")]
        try await KafkaAdmin.createTopics(
            topics.map { (name: $0, partitions: 1) }, bootstrapServers: brokers, timeout: .seconds(10),
            logger: KafkaTestSupport.logger)
        let producer = try KafkaIntegration.makeProducer()
        try await withServicesRunning([producer]) {
            // Each send waited for: a record batch of its own, so that a fetch can stop between them.
            for chunk in 0..<60 {
                for topic in topics {
                    let records = (0..<50).map { KafkaRecord(topic: topic, value: Array("\(chunk * 50 + $0)".utf8)) }
                    for result in await producer.send(records) { _ = try result.get() }
                }
            }
        }
        var configuration = KafkaIntegration.consumerConfiguration(groupId: KafkaTestSupport.uniqueName("g"), topics: topics)
        configuration.maxBatchSize = 50
        let consumer = try KafkaConsumer(configuration: configuration, logger: KafkaTestSupport.logger)
        let readByTopic = try await withServicesRunning([consumer]) {
            var read: [String: Int] = [:]
            var iterator = consumer.batches.makeAsyncIterator()
            for _ in 0..<16 {
                guard let batch = try await iterator.next() else { break }
                for message in batch { read[message.topic, default: 0] += 1 }
                // Longer than the poller waits before it pauses (a second), saying it is at work.
                for _ in 0..<3 {
                    consumer.noteProgress()
                    try await Task.sleep(for: .milliseconds(500))
                }
            }
            return read
        }
        // Produced side by side, read side by side: apart by at most what the first fetches
        // held of one topic before the other (five record batches here). Without what was
        // fetched ahead kept, one topic was read 550 times, the other 250.
        let counts = topics.map { readByTopic[$0, default: 0] }
        #expect(counts.reduce(0, +) == 800)
        #expect(abs(counts[0] - counts[1]) <= 150, "records read of each topic in the first 16 batches: \(counts)")
    }

    @Test("a restarted member resumes after the last committed offset")
    func resumeAfterCommit() async throws {
        let topic = KafkaTestSupport.uniqueName("kafka-it-commit")
        let group = KafkaTestSupport.uniqueName("g")
        try await Self.createTopic(topic, filledWith: 40)
        let p0 = KafkaTopicPartition(topic: topic, partition: 0)
        let p1 = KafkaTopicPartition(topic: topic, partition: 1)

        let before = try KafkaConsumer(
            configuration: KafkaIntegration.consumerConfiguration(groupId: group, topics: [topic]), logger: KafkaTestSupport.logger)
        let beforeReceived = ReceivedMessages(before)
        try await withServicesRunning([before]) {
            _ = try await beforeReceived.waitFor(count: 40)
            // Processed 0...11 of partition 0 and 0...4 of partition 1.
            try before.commit([p0: 12, p1: 5])
        }

        let after = try KafkaConsumer(
            configuration: KafkaIntegration.consumerConfiguration(groupId: group, topics: [topic]), logger: KafkaTestSupport.logger)
        let afterReceived = ReceivedMessages(after)
        let messages = try await withServicesRunning([after]) { try await afterReceived.waitFor(count: 23) }
        #expect(messages.filter { $0.partition == 0 }.map(\.offset) == Array(12..<20))
        #expect(messages.filter { $0.partition == 1 }.map(\.offset) == Array(5..<20))
    }

    /// A member whose partitions the group moves to another sends the commits it deferred
    /// first: the new owner starts after what the first processed, not where the last interval
    /// left the group.
    @Test("deferred commits go to the group before the partitions are revoked")
    func deferredCommitsGoBeforeRevocation() async throws {
        let topic = KafkaTestSupport.uniqueName("kafka-it-revoked")
        let group = KafkaTestSupport.uniqueName("g")
        try await Self.createTopic(topic, filledWith: 20)
        let partitions = [0, 1].map { KafkaTopicPartition(topic: topic, partition: $0) }
        var deferring = KafkaIntegration.consumerConfiguration(groupId: group, topics: [topic])
        deferring.commitInterval = .seconds(60)
        let first = try KafkaConsumer(configuration: deferring, logger: KafkaTestSupport.logger)
        let firstReceived = ReceivedMessages(first)
        try await withServicesRunning([first]) {
            _ = try await firstReceived.waitFor(count: 20)
            try first.commit([partitions[0]: 7, partitions[1]: 7])
            let second = try KafkaConsumer(
                configuration: KafkaIntegration.consumerConfiguration(groupId: group, topics: [topic]),
                logger: KafkaTestSupport.logger)
            let secondReceived = ReceivedMessages(second)
            let messages = try await withServicesRunning([second]) { try await secondReceived.waitFor(count: 3) }
            #expect(messages.map(\.offset) == [7, 8, 9])
        }
    }

    /// Creates `topic` with 2 partitions and produces `count` records to it, record n to partition n % 2.
    static func createTopic(_ topic: String, filledWith count: Int) async throws {
        try await KafkaAdmin.createTopics(
            [(name: topic, partitions: 2)], bootstrapServers: TestEnvironment.kafkaBrokers, timeout: .seconds(10),
            logger: KafkaTestSupport.logger)
        let producer = try KafkaIntegration.makeProducer()
        try await withServicesRunning([producer]) {
            for result in await producer.send(
                (0..<count).map { KafkaRecord(topic: topic, value: Array("\($0)".utf8), partition: Int32($0 % 2)) })
            {
                _ = try result.get()
            }
        }
    }

    @Test("a broker that is not there is reported clearly and in bounded time")
    func brokerDown() async throws {
        let nowhere = "127.0.0.1:1"
        let started = ContinuousClock.now
        let error = await #expect(throws: KafkaError.self) {
            try await KafkaAdmin.waitUntilReachable(bootstrapServers: nowhere, timeout: .seconds(2), logger: KafkaTestSupport.logger)
        }
        #expect(error?.description.contains(nowhere) == true)
        // Bounds tell a configured timeout (2 s) from a hang, with room for a loaded machine.
        #expect(ContinuousClock.now - started < .seconds(30))

        let producer = try KafkaProducer(
            configuration: KafkaProducerConfiguration(bootstrapServers: nowhere, messageTimeout: .seconds(2)),
            logger: KafkaTestSupport.logger)
        let sendStarted = ContinuousClock.now
        let sendError = try await withServicesRunning([producer]) {
            await #expect(throws: KafkaError.self) {
                try await producer.send(KafkaRecord(topic: "kafka-it-nowhere", value: [1]))
            }
        }
        #expect(sendError?.code == .messageTimedOut)
        #expect(ContinuousClock.now - sendStarted < .seconds(30))
    }

    @Test("the broker probe reports a broker that answers and one that does not")
    func brokerProbe() async throws {
        let seen = Mutex<[String: [Bool]]>([:])
        let probes = [("up", TestEnvironment.kafkaBrokers), ("down", "127.0.0.1:1")].map { name, brokers in
            KafkaBrokerProbe(
                bootstrapServers: brokers, interval: .milliseconds(200), timeout: .milliseconds(500),
                logger: KafkaTestSupport.logger
            ) { reachable in seen.withLock { $0[name, default: []].append(reachable) } }
        }
        try await withServicesRunning(probes) {
            let deadline = ContinuousClock.now + .seconds(30)
            while seen.withLock({ $0.count < 2 }), ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(100))
            }
            // Changes only: a steady broker is reported once, however many times it is asked.
            try await Task.sleep(for: .seconds(1))
        }
        #expect(seen.withLock { $0["up"] } == [true])
        #expect(seen.withLock { $0["down"] } == [false])
    }
}
