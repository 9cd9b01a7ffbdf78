import Testing

@testable import Kafka

@Suite("State machines and configuration")
struct StateMachineTests {
    static let receipt = KafkaDeliveryReceipt(topic: "t", partition: 0, offset: 1)

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
    }

    @Test("errors read well in logs")
    func errorDescription() {
        let error = KafkaError(message: "delivery to topic fixes failed", name: "_MSG_TIMED_OUT", reason: "Local: Message timed out")
        #expect(error.description == "delivery to topic fixes failed: _MSG_TIMED_OUT (Local: Message timed out)")
    }
}
