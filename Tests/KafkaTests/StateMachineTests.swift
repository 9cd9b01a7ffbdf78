import Foundation
import NIOConcurrencyHelpers
import Testing

@testable import Kafka

@Suite("State machines and configuration")
struct StateMachineTests {
    static let receipt = KafkaDeliveryReceipt(topic: "t", partition: 0, offset: 1)

    /// One partition's backlog fetched ahead of another's, as a broker answers a fetch: the
    /// batches follow record time across partitions and offsets within each.
    @Test("collected records go out merged by record time, each partition's in offset order")
    func collectedRecordsMergeByTime() {
        func record(_ topic: String, _ offset: Int64, second: Double?) -> KafkaConsumerMessage {
            KafkaConsumerMessage(
                topic: topic, partition: 0, offset: offset, value: Array(repeating: 0, count: 10),
                timestamp: second.map { Date(timeIntervalSince1970: $0) })
        }
        var collected = CollectedRecords()
        // Check-ins at seconds 0, 2, 4, 6 fetched before check-outs at 1, 3, 5, 7.
        for offset in 0..<4 { collected.append(record("ins", Int64(offset), second: Double(2 * offset))) }
        for offset in 0..<4 { collected.append(record("outs", Int64(offset), second: Double(2 * offset + 1))) }
        #expect(collected.count == 8 && collected.bytes == 80)
        let first = collected.takeBatch(maxCount: 3, maxBytes: .max)
        #expect(first.map { "\($0.topic)\($0.offset)" } == ["ins0", "outs0", "ins1"])
        // Bytes bound a batch, which holds one record at least.
        #expect(collected.takeBatch(maxCount: 10, maxBytes: 25).map { "\($0.topic)\($0.offset)" } == ["outs1", "ins2"])
        #expect(collected.takeBatch(maxCount: 10, maxBytes: 5).map { "\($0.topic)\($0.offset)" } == ["outs2"])
        // Without record times, the order polled; a revoked partition's records go.
        collected.append(record("late", 0, second: nil))
        collected.remove([KafkaTopicPartition(topic: "ins", partition: 0)])
        #expect(collected.count == 2 && collected.bytes == 20)
        #expect(collected.takeBatch(maxCount: 10, maxBytes: .max).map { "\($0.topic)\($0.offset)" } == ["outs3", "late0"])
        #expect(collected.isEmpty && collected.bytes == 0)
    }

    @Test("a report that arrives before its sender waits is kept for it")
    func earlyReport() {
        var machine = ProducerStateMachine<String>()
        _ = machine.startRunning()
        let early = try! machine.allocateId().get()
        let late = try! machine.allocateId().get()
        #expect(machine.reportArrived(id: early, report: .success(Self.receipt)) == nil)
        #expect((try? machine.wait(id: early, waiter: "early")?.get()) == Self.receipt)
        #expect(machine.wait(id: late, waiter: "late") == nil)
        #expect(machine.reportArrived(id: late, report: .success(Self.receipt)) == "late")
    }

    @Test("no ids after shutdown")
    func finished() {
        var machine = ProducerStateMachine<String>()
        _ = machine.startRunning()
        let id = try! machine.allocateId().get()
        #expect(machine.wait(id: id, waiter: "waiting") == nil)
        #expect(machine.finish() == ["waiting"])
        #expect(throws: KafkaError.self) { try machine.allocateId().get() }
    }

    @Test("a partition assigned again is a new generation, so older messages are stale")
    func generations() {
        var machine = ConsumerStateMachine()
        let partition = KafkaTopicPartition(topic: "t", partition: 0)
        let first = machine.assigned([partition])[partition]!
        #expect(machine.isCurrent(partition, generation: first))
        machine.revoked([partition])
        #expect(!machine.isCurrent(partition, generation: first))
        let second = machine.assigned([partition])[partition]!
        #expect(!machine.isCurrent(partition, generation: first))
        #expect(machine.isCurrent(partition, generation: second))
        #expect(machine.assignment == [partition])
    }

    @Test("only the application commits; Tansu-friendly timeouts are passed when set")
    func consumerProperties() {
        var configuration = KafkaConsumerConfiguration(
            bootstrapServers: "b:9092", groupId: "g", topics: ["t"], sessionTimeout: .seconds(6),
            assignmentStrategy: .cooperativeSticky, properties: ["fetch.wait.max.ms": "50"])
        configuration.heartbeatInterval = .milliseconds(1500)
        let properties = configuration.librdkafkaProperties()
        #expect(properties["enable.auto.commit"] == "false")
        #expect(properties["enable.auto.offset.store"] == "false")
        #expect(properties["session.timeout.ms"] == "6000")
        #expect(properties["heartbeat.interval.ms"] == "1500")
        #expect(properties["max.poll.interval.ms"] == nil)
        #expect(properties["partition.assignment.strategy"] == "cooperative-sticky")
        #expect(properties["fetch.wait.max.ms"] == "50")
    }

    @Test("the producer is idempotent and partitions like the Java client")
    func producerProperties() {
        let properties = KafkaProducerConfiguration(bootstrapServers: "b:9092", messageTimeout: .seconds(5))
            .librdkafkaProperties()
        #expect(properties["enable.idempotence"] == "true")
        #expect(properties["acks"] == "all")
        #expect(properties["partitioner"] == "murmur2_random")
        #expect(properties["message.timeout.ms"] == "5000")
        #expect(properties["linger.ms"] == nil)
    }

    @Test("a producer's linger is librdkafka's linger.ms, under an explicit property")
    func producerLinger() {
        var configuration = KafkaProducerConfiguration(bootstrapServers: "b:9092", linger: .milliseconds(50))
        #expect(configuration.librdkafkaProperties()["linger.ms"] == "50")
        configuration.properties = ["linger.ms": "7"]
        #expect(configuration.librdkafkaProperties()["linger.ms"] == "7")
    }

    @Test("errors read well in logs")
    func errorDescription() {
        let error = KafkaError(message: "delivery to topic fixes failed", code: .messageTimedOut, reason: "Local: Message timed out")
        #expect(error.description == "delivery to topic fixes failed: _MSG_TIMED_OUT (Local: Message timed out)")
    }
}

@Suite("Message batches")
struct MessageBatchesTests {
    static func message(_ partition: Int32, _ offset: Int64) -> KafkaConsumerMessage {
        KafkaConsumerMessage(topic: "t", partition: partition, offset: offset, value: [])
    }

    @Test("messages polled before their partition was revoked are not handed out")
    func revokedAreDropped() async throws {
        let state = NIOLockedValueBox(ConsumerStateMachine())
        let gate = PollGate()
        let (batches, source) = KafkaMessageBatches.make(state: state, gate: gate)
        let p0 = KafkaTopicPartition(topic: "t", partition: 0)
        let p1 = KafkaTopicPartition(topic: "t", partition: 1)
        let generations = state.withLockedValue { $0.assigned([p0, p1]) }
        _ = source.yield(contentsOf: [
            PolledBatch(messages: [Self.message(0, 0), Self.message(1, 0)], generations: generations),
            PolledBatch(messages: [Self.message(1, 1)], generations: [p1: generations[p1]!]),
            PolledBatch(messages: [Self.message(0, 1)], generations: [p0: generations[p0]!]),
        ])
        // Partition 1 is revoked (and even assigned again) before the application reads.
        state.withLockedValue { $0.revoked([p1]) }
        _ = state.withLockedValue { $0.assigned([p1]) }
        source.finish()

        var delivered: [[Int64]] = []
        for try await batch in batches { delivered.append(batch.map { Int64($0.partition) * 100 + $0.offset }) }
        // The batch left empty by the revoke is skipped entirely.
        #expect(delivered == [[0], [1]])
    }
}
