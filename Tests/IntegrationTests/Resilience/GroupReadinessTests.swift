import BatchProcessing
import Foundation
import Kafka
import KafkaTesting
import Persistence
import ServiceSupport
import Testing

/// A worker is not ready before its consumer has joined the group: records sent then would
/// wait seconds for the group to form, and a load started on `/ready` would measure that wait.
@Suite struct GroupReadinessTests {
    @Test func groupIsNotReadyUntilTheMemberTakesUpItsFirstAssignment() async throws {
        let harness = PipelineHarness()
        try await harness.prepare()
        var configuration = harness.consumerConfiguration(clientId: "test-readiness")
        configuration.groupId = harness.evaluatorGroup
        configuration.topics = [harness.topics.fixes]
        let consumer = try KafkaConsumer(configuration: configuration, logger: harness.logger)
        let readiness = Readiness()
        let database = Database(configuration: try harness.databaseConfiguration(), logger: harness.logger)
        let recovery = GroupRecovery(
            service: "test", consumer: consumer, group: harness.evaluatorGroup,
            groups: ConsumerGroupStore(database: database, logger: harness.logger), stuckAfter: .seconds(60),
            readiness: readiness, logger: harness.logger)
        #expect(readiness.report["group"] == false)
        #expect(!consumer.hasJoinedGroup)
        try await withServicesRunning([database, consumer, recovery]) {
            var readyBeforeJoining = false
            _ = try await KafkaTestSupport.waitUntil("the member joined", within: .seconds(60)) {
                // Read in this order: ready, and not joined after that, was ready before joining.
                let ready = readiness.report["group"] == true
                if consumer.hasJoinedGroup { return true }
                if ready { readyBeforeJoining = true }
                return false
            }
            #expect(!readyBeforeJoining, "/ready said group: true before the member had joined")
            _ = try await KafkaTestSupport.waitUntil("group ready", within: .seconds(10)) { readiness.report["group"] == true }
        }
    }
}
