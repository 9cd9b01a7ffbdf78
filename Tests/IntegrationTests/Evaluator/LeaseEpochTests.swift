import Foundation
import Geofence
import Kafka
import Logging
import Persistence
import PostgresNIO
import Shared
import Testing

@testable import Evaluator

/// A batch that outlives its partition's revocation, while the partition is handed back
/// to the same worker under a newer epoch, fails its ownership check and rolls back;
/// the newer lease stays, and the partition's next batch commits.
@Suite(.serialized) struct LeaseEpochTests {
    let logger = Logger.forTests("test.lease-epochs", level: .critical)

    @Test func leaseGrantedAgainDuringASlowBatchSurvivesThatBatchsOwnershipFailure() async throws {
        let logger = logger
        let suffix = UUID().uuidString.prefix(8).lowercased()
        let project = "project-\(suffix)"
        let topics = Topics(
            fixes: "test-\(suffix).fixes", fixesDeadLetter: "test-\(suffix).fixes.dlq", checkIns: "test-\(suffix).checkins",
            checkOuts: "test-\(suffix).checkouts", eventsDeadLetter: "test-\(suffix).events.dlq")
        let configuration = EvaluatorConfiguration(groupId: "evaluator-\(suffix)", topics: topics)
        let partition = KafkaTopicPartition(topic: topics.fixes, partition: 0)
        let trip = TestTrip(projectId: project)
        @Sendable func message(_ offset: Int64, fix index: Int) throws -> KafkaConsumerMessage {
            KafkaConsumerMessage(
                topic: topics.fixes, partition: 0, offset: offset, key: Array(trip.deviceId.utf8),
                value: Array(try JSONSerialization.data(withJSONObject: trip.fix(index))), timestamp: Date())
        }

        try await withMigratedDatabase(url: try await freshDatabaseURL(logger: logger), logger: logger) { database in
            try await ProjectStore(database: database, logger: logger).createProject(id: project, name: "Leases")
            let producer = try KafkaProducer(
                configuration: KafkaProducerConfiguration(bootstrapServers: TestEnvironment.kafkaBrokers, clientId: "test-leases"),
                logger: logger)
            let catalog = ZoneCatalog(
                zones: ZoneStore(database: database, logger: logger), configuration: EngineConfiguration(),
                refreshInterval: .seconds(60), logger: logger)
            let leases = PartitionLeases()
            let processor = FixBatchProcessor(
                configuration: configuration, database: database, producer: producer, catalog: catalog, leases: leases,
                logger: logger)
            let ownership = PartitionOwnershipStore(database: database, logger: logger)
            @Sendable func take() async throws -> Int64 {
                let taken = try await ownership.acquire(
                    group: configuration.groupId, topic: topics.fixes, partitions: [0], owner: "worker")
                let epoch = try #require(taken.epochs[0])
                leases.granted([partition: epoch], nextOffsets: [:])
                return epoch
            }

            _ = try await take()
            // The device's state exists, so that a batch of it waits for its row lock.
            _ = try await processor.process([try message(0, fix: 0)])

            let (lockHeld, holding) = AsyncStream.makeStream(of: Void.self)
            let (unlock, unlocking) = AsyncStream.makeStream(of: Void.self)
            let holder = Task {
                try await database.withTransaction { connection in
                    try await connection.query(
                        "SELECT 1 FROM device_states WHERE project_id = \(project) AND device_id = \(trip.deviceId) FOR UPDATE",
                        logger: logger)
                    holding.yield()
                    for await _ in unlock { break }
                }
            }
            for await _ in lockHeld { break }

            // The slow batch, under the first epoch, waits for the device's row.
            let slow = Task { try await processor.process([try message(1, fix: 1)]) }
            // Waiting on the lock means it has taken its epochs and is inside its transaction.
            try await waitUntil("the batch waits for the device's row", within: .seconds(60)) {
                let rows = try await database.client.query(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
                    logger: logger)
                var waiting = 0
                for try await count in rows.decode(Int.self) { waiting = count }
                return waiting > 0
            }
            // Revoked, and handed back to this worker under a newer epoch.
            leases.released([partition])
            let newer = try await take()
            unlocking.yield()
            try await holder.value

            await #expect(throws: PartitionOwnershipLost.self) { _ = try await slow.value }
            #expect(leases.owns(partition))
            #expect(try leases.epochs(covering: [partition]).values.first == newer)

            // The partition's next batch, under the newer epoch, commits.
            let outcome = try await processor.process([try message(1, fix: 1)])
            #expect(outcome.nextOffsets[partition] == 2)
        }
    }
}
