import Foundation
import Geofence
import Kafka
import KafkaTesting
import Persistence
import Shared
import Testing

/// The stale check-out is judged against the stream, and the stream's times come from
/// the producers' clocks: producers whose clocks differ (within the evaluator's bound on
/// producer skew) must not make a reporting device look silent.
@Suite(.serialized) struct ProducerClockSkewTests {
    static let staleAfter = 6.0
    static let skewAllowance = 30

    /// Device A writes its fixes itself, every 5 s (less than `staleAfter`), with a clock
    /// 2 s behind; another producer, on time, writes device B's fixes to the same partition
    /// every half second. Before, B's records moved the partition's consumed time past A's
    /// deadline before A's next fix came, and A was checked out and in again every round.
    @Test func producersTwoSecondsApartDoNotTimeOutAReportingDevice() async throws {
        var configured = PipelineHarness()
        // A database of its own: the stale sweep of another test's evaluator (with the usual
        // two hours) would otherwise judge this device's state, and set its deadline by them.
        configured.databaseURL = try await freshDatabaseURL(logger: configured.logger)
        configured.engine.staleAfter = Self.staleAfter
        configured.staleSweepInterval = .milliseconds(500)
        // A bound well above the 2 s the producers are apart, so that the test's own sends,
        // late on a busy machine, cannot look like a device gone silent; the stream's time
        // without the allowance would still time the device out within a second.
        configured.maximumProducerSkew = .seconds(Self.skewAllowance)
        let harness = configured
        try await harness.run { _, _ in
            let reporting = TestTrip(projectId: harness.projectId)
            let other = TestTrip(projectId: harness.projectId)
            let behind: TimeInterval = -2
            let producer = try KafkaProducer(
                configuration: KafkaProducerConfiguration(bootstrapServers: TestEnvironment.kafkaBrokers, clientId: "test-skew"),
                logger: harness.logger)
            try await withServicesRunning([producer]) {
                func send(_ trip: TestTrip, index: Int, stampedAt stamp: Date) async throws {
                    var fix = trip.fix(index)
                    fix["timestamp"] = RFC3339.format(stamp)
                    fix["fixId"] = UUID().uuidString
                    _ = try await producer.send(
                        KafkaRecord(
                            topic: harness.topics.fixes, key: Array(trip.deviceId.utf8),
                            value: Array(try JSONSerialization.data(withJSONObject: fix)), partition: 0, timestamp: stamp))
                }
                let steady = Task {
                    while !Task.isCancelled {
                        try await send(other, index: 0, stampedAt: Date())
                        try await Task.sleep(for: .milliseconds(500))
                    }
                }
                defer { steady.cancel() }
                // On a fixed schedule, so that A's fixes are 5 s apart by its clock however long a
                // send takes on a busy machine (fixes further apart than `staleAfter` would rightly
                // time A out on their own).
                let started = ContinuousClock.now
                let startedAt = Date()
                var lastStamp = startedAt
                for round in 0..<6 {
                    let due = started + .seconds(5 * round)
                    try await Task.sleep(until: due, clock: .continuous)
                    lastStamp = startedAt.addingTimeInterval(Double(5 * round) + behind)
                    try await send(reporting, index: 4, stampedAt: lastStamp)
                }
                try await Task.sleep(until: started + .seconds(30), clock: .continuous)
                // Read on a busy machine, these may include the check-out A earns once it has gone
                // silent after its last fix; none may time it out before that fix's deadline.
                let whileReporting = try await events(of: reporting.deviceId, harness)
                let lastDeadline = lastStamp.addingTimeInterval(Self.staleAfter)
                var checkIns = 0
                var earlyCheckOuts = 0
                for event in whileReporting {
                    if event.type == .checkin { checkIns += 1 }
                    if event.type == .checkout, let time = event.checkOutTime, time < lastDeadline { earlyCheckOuts += 1 }
                }
                let described = whileReporting.map { event in "\(event.type) \(String(describing: event.checkOutTime))" }
                #expect(checkIns == 1 && earlyCheckOuts == 0, "events while reporting: \(described)")

                // Once it really goes silent, it is timed out (in time: the wait is long because
                // suites run side by side against one broker, which can hold a group's rebalance).
                let deadline = ContinuousClock.now + .seconds(120 + Self.skewAllowance)
                var after = whileReporting
                while after.count < 2 && ContinuousClock.now < deadline {
                    try await Task.sleep(for: .seconds(2))
                    after = try await events(of: reporting.deviceId, harness)
                }
                let inputs = after.count < 2 ? try await sweepInputs(of: reporting.deviceId, harness) : ""
                #expect(after.map(\.type) == [.checkin, .checkout], "the device's state and its stream: \(inputs)")
            }
        }
    }

    /// What the stale sweep judges the device by: its state's deadline and partition, and how
    /// far each partition of its stream has been consumed (and when that was last written).
    func sweepInputs(of deviceId: String, _ harness: PipelineHarness) async throws -> String {
        try await Database.withTemporaryClient(configuration: try harness.databaseConfiguration(), logger: harness.logger) {
            database in
            var lines: [String] = [
                "now \(RFC3339.format(Date())), this process \(ProcessInfo.processInfo.processIdentifier), stale after \(harness.engine.staleAfter) s"
            ]
            for try await (staleAt, partition, lastFix) in try await database.client.query(
                """
                SELECT stale_at, partition, last_fix_at FROM device_states
                 WHERE project_id = \(harness.projectId) AND device_id = \(deviceId)
                """, logger: harness.logger
            ).decode((Date?, Int32?, Date?).self) {
                lines.append(
                    "state: stale at \(staleAt.map(RFC3339.format) ?? "-"), partition \(partition.map(String.init) ?? "-"), last fix \(lastFix.map(RFC3339.format) ?? "-")"
                )
            }
            for try await (partition, next, consumed, updated) in try await database.client.query(
                """
                SELECT partition, next_offset, consumed_until, updated_at FROM consumer_offsets
                 WHERE consumer_group = \(harness.evaluatorGroup) AND topic = \(harness.topics.fixes) ORDER BY partition
                """, logger: harness.logger
            ).decode((Int32, Int64, Date?, Date).self) {
                lines.append(
                    "partition \(partition): next offset \(next), consumed until \(consumed.map(RFC3339.format) ?? "-"), written \(RFC3339.format(updated))"
                )
            }
            for try await (partition, owner, epoch) in try await database.client.query(
                "SELECT partition, owner, epoch FROM partition_epochs WHERE consumer_group = \(harness.evaluatorGroup) ORDER BY partition",
                logger: harness.logger
            ).decode((Int32, String, Int64).self) {
                lines.append("epoch: partition \(partition) held by \(owner) at \(epoch)")
            }
            for try await (group, partition, next) in try await database.client.query(
                "SELECT consumer_group, partition, next_offset FROM consumer_offsets WHERE topic = \(harness.topics.fixes) ORDER BY 1, 2",
                logger: harness.logger
            ).decode((String, Int32, Int64).self) {
                lines.append("offsets of \(group) on partition \(partition): \(next)")
            }
            return lines.joined(separator: "; ")
        }
    }

    /// The device's events as decided: read from the event log, written with the decisions,
    /// so that what is judged here does not wait on a reader joining a group on a busy broker.
    func events(of deviceId: String, _ harness: PipelineHarness) async throws -> [CheckEvent] {
        try await Database.withTemporaryClient(configuration: try harness.databaseConfiguration(), logger: harness.logger) {
            database in
            var events: [CheckEvent] = []
            for try await json in try await database.client.query(
                "SELECT event FROM event_log WHERE project_id = \(harness.projectId) AND device_id = \(deviceId)",
                logger: harness.logger
            ).decode(String.self) {
                events.append(try WireJSON.decoder().decode(CheckEvent.self, from: Data(json.utf8)))
            }
            return events.sorted { ($0.checkOutTime ?? $0.location.timestamp) < ($1.checkOutTime ?? $1.location.timestamp) }
        }
    }
}
