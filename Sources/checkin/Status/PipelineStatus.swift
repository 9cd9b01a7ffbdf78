import AsyncHTTPClient
import BatchProcessing
import Evaluator
import Foundation
import Kafka
import Logging
import NIOCore
import Notifier
import Persistence
import Shared

/// What `checkin status` found, as printed in its table or as `--json`.
struct PipelineStatus: Codable, Sendable {
    struct ServiceReadiness: Codable, Sendable {
        var url: String
        var ready: Bool
        var components: [String: Bool]
        /// The parts of the pipeline it runs, as its `/ready` says.
        var serves: [String] = []
        /// Why the service could not be asked, when it could not.
        var error: String?
    }

    /// The consumer group a worker is in now: the configured group id until a rebalance
    /// that never completed moved the group on to its next incarnation (`<group>~<n>`).
    struct ConsumerGroup: Codable, Sendable {
        var worker: String
        var incarnation: Int
        var groupId: String
        /// Whose committed offsets the lag counts from: the evaluators keep theirs in Postgres
        /// under the configured group id, whatever the incarnation; the notifier commits to its group.
        var offsetsGroup: String
        var offsetsSource: String
    }

    struct PartitionLag: Codable, Sendable {
        /// The group id whose committed offsets were read.
        var group: String
        var topic: String
        var partition: Int32
        var committed: Int64?
        var end: Int64
        var lag: Int64
    }

    struct DeadLetters: Codable, Sendable {
        var topic: String
        var lastHour: Int64
        var total: Int64
        /// Those `checkin dead-letters redrive` has not sent back yet; nil when Postgres,
        /// which keeps how far each partition was sent back, did not answer.
        var notSentBack: Int64?
    }

    var services: [ServiceReadiness] = []
    var groups: [ConsumerGroup] = []
    var lag: [PartitionLag] = []
    /// Seconds since the oldest fix not yet evaluated was written; nil when none is waiting.
    var oldestUnprocessedFixAgeSeconds: Double?
    var deadLetters: [DeadLetters] = []
    var deliveries: [EndpointBacklog] = []
    /// What makes the pipeline unhealthy now (the command exits non-zero).
    var problems: [String] = []
    /// What an operator should look at, but which stops nothing.
    var warnings: [String] = []
    var healthy: Bool { problems.isEmpty }
}

/// Gathers a ``PipelineStatus``: asks each service's `/ready`, Postgres for the groups'
/// incarnations, the broker for end offsets and dead letters, Postgres and the notifier's
/// current group for committed offsets, and Postgres for the delivery backlog. A source
/// that does not answer becomes a problem naming it; the others are still read.
struct PipelineStatusReader {
    /// The services to ask; nil: the local ones from `localPort` (see `localServices`).
    var readyURLs: [String]?
    var localPort = 8080
    var brokers: String
    var kafkaProperties: [String: String]
    var database: DatabaseConfiguration
    var topics: Topics
    var evaluatorGroup: String
    var notifierGroup: String
    var maximumLag: Int64
    var maximumFixAge: Double
    var timeout: Duration
    var logger: Logger

    func read() async -> PipelineStatus {
        var status = PipelineStatus()
        if let readyURLs {
            for url in readyURLs { status.services.append(await readiness(url)) }
        } else {
            status.services = await localServices()
        }
        for service in status.services where !service.ready {
            if let error = service.error {
                status.problems.append("\(service.url) does not answer: \(error)")
            } else {
                let down = service.components.filter { !$0.value }.keys.sorted()
                status.problems.append(
                    "\(service.url) is not ready" + (down.isEmpty ? "" : ": \(down.joined(separator: ", ")) not ready"))
            }
        }

        let brokerAnswers: Bool
        do {
            try await KafkaAdmin.waitUntilReachable(
                bootstrapServers: brokers, properties: kafkaProperties, timeout: timeout, logger: logger)
            brokerAnswers = true
        } catch {
            // The error names the broker and says what failed.
            status.problems.append("\(error)")
            brokerAnswers = false
        }
        let configuration = database
        let logger = logger
        let timeout = timeout
        let deadLetterTopics = [topics.fixesDeadLetter, topics.eventsDeadLetter]
        let fromDatabase = await Result(catching: {
            () async throws -> (Incarnations, FixLag?, [EndpointBacklog], SentBack) in
            try await Database.withTemporaryClient(configuration: configuration, logger: logger) { database in
                try await database.waitUntilReachable(timeout: timeout)
                let groups = ConsumerGroupStore(database: database, logger: logger)
                let incarnations = Incarnations(
                    evaluator: try await groups.incarnation(of: evaluatorGroup),
                    notifier: try await groups.incarnation(of: notifierGroup))
                let backlog = try await OperationsStore(database: database, logger: logger).deliveryBacklog()
                let redrives = DeadLetterRedriveStore(database: database, logger: logger)
                var sentBack: SentBack = [:]
                for topic in deadLetterTopics { sentBack[topic] = try await redrives.positions(topic: topic) }
                guard brokerAnswers else { return (incarnations, nil, backlog, sentBack) }
                let reader = try KafkaOffsetReader(bootstrapServers: brokers, properties: kafkaProperties, logger: logger)
                let lag = try await FixLag.read(
                    reader: reader, offsets: OffsetStore(database: database, logger: logger), group: evaluatorGroup,
                    topic: topics.fixes)
                return (incarnations, lag, backlog, sentBack)
            }
        })
        var sentBack: SentBack?
        switch fromDatabase {
        case .success(let (incarnations, fixLag, backlog, redriven)):
            sentBack = redriven
            let notifierGroupId = GroupRecovery.groupId(notifierGroup, incarnation: incarnations.notifier)
            status.groups = [
                .init(
                    worker: "evaluator", incarnation: incarnations.evaluator,
                    groupId: GroupRecovery.groupId(evaluatorGroup, incarnation: incarnations.evaluator),
                    offsetsGroup: evaluatorGroup, offsetsSource: "postgres"),
                .init(
                    worker: "notifier", incarnation: incarnations.notifier, groupId: notifierGroupId,
                    offsetsGroup: notifierGroupId, offsetsSource: "broker"),
            ]
            status.deliveries = backlog
            if let fixLag {
                status.lag += fixLag.partitions.map { row(group: evaluatorGroup, $0) }
                // To the millisecond: `--json` readers get 12.345, not 12.345678901234.
                status.oldestUnprocessedFixAgeSeconds = fixLag.oldestUnprocessedFix.map {
                    (max(Date().timeIntervalSince($0), 0) * 1000).rounded() / 1000
                }
            }
        case .failure(let error):
            status.problems.append(
                "could not read the consumer groups' incarnations, the evaluators' offsets and the deliveries: \(error)")
        }
        if brokerAnswers {
            do {
                // Without its incarnation from Postgres the notifier's group is unknown: its lag is left out.
                let notifierGroupId = status.groups.first { $0.worker == "notifier" }?.offsetsGroup
                try await readNotifierLagAndDeadLetters(group: notifierGroupId, sentBack: sentBack, into: &status)
            } catch {
                status.problems.append("could not read offsets from the broker at \(brokers): \(error)")
            }
        }
        judge(&status)
        return status
    }

    /// The incarnation each worker's consumer group is in, from Postgres.
    private struct Incarnations: Sendable {
        var evaluator: Int
        var notifier: Int
    }

    /// How far each partition of each dead-letter topic was sent back (the next offset a
    /// redrive reads), by topic.
    private typealias SentBack = [String: [Int32: Int64]]

    private func readNotifierLagAndDeadLetters(
        group notifierGroupId: String?, sentBack: SentBack?, into status: inout PipelineStatus
    ) async throws {
        if let notifierGroupId {
            let grouped = try KafkaOffsetReader(
                bootstrapServers: brokers, group: notifierGroupId, properties: kafkaProperties, logger: logger)
            for topic in [topics.checkIns, topics.checkOuts] {
                let partitions = try await grouped.lag(topic: topic) {
                    try await grouped.committedOffsets(topic: topic, partitions: $0)
                }
                status.lag += partitions.map { row(group: notifierGroupId, $0) }
            }
        }
        let reader = try KafkaOffsetReader(bootstrapServers: brokers, properties: kafkaProperties, logger: logger)
        let hourAgo = Date().addingTimeInterval(-3600)
        for topic in [topics.fixesDeadLetter, topics.eventsDeadLetter] {
            let partitions = try await reader.partitions(of: topic)
            let ends = try await reader.watermarks(topic: topic, partitions: partitions)
            let sinceHourAgo = try await reader.offsets(topic: topic, partitions: partitions, at: hourAgo)
            let positions = sentBack?[topic]
            var lastHour: Int64 = 0
            var total: Int64 = 0
            var notSentBack: Int64 = 0
            for (partition, marks) in ends {
                total += marks.high - marks.low
                // -1: no record stamped after the time, so none in the last hour.
                let first = sinceHourAgo[partition].flatMap { $0 >= 0 ? $0 : nil } ?? marks.high
                lastHour += max(marks.high - max(first, marks.low), 0)
                notSentBack += max(marks.high - DeadLetterRedrive.nextOffset(sentBackTo: positions?[partition], watermarks: marks), 0)
            }
            status.deadLetters.append(
                .init(topic: topic, lastHour: lastHour, total: total, notSentBack: positions == nil ? nil : notSentBack))
        }
    }

    private func row(group: String, _ lag: KafkaPartitionLag) -> PipelineStatus.PartitionLag {
        .init(
            group: group, topic: lag.partition.topic, partition: lag.partition.partition, committed: lag.committed,
            end: lag.watermarks.high, lag: lag.records)
    }

    private func judge(_ status: inout PipelineStatus) {
        for (group, rows) in Dictionary(grouping: status.lag, by: \.group).sorted(by: { $0.key < $1.key }) {
            let behind = rows.reduce(0) { $0 + $1.lag }
            if behind > maximumLag {
                status.problems.append("consumer group \(group) is \(behind) records behind (more than --max-lag \(maximumLag))")
            }
        }
        if let age = status.oldestUnprocessedFixAgeSeconds, age > maximumFixAge {
            status.problems.append(
                String(format: "the oldest unprocessed fix is %.0f s old (more than --max-fix-age %.0f s)", age, maximumFixAge))
        }
        for dead in status.deadLetters where dead.lastHour > 0 {
            status.warnings.append("\(dead.lastHour) dead letters on \(dead.topic) in the last hour (checkin dead-letters list)")
        }
        for endpoint in status.deliveries {
            let name = "endpoint \(endpoint.endpointId) of project \(endpoint.projectId)"
            if !endpoint.enabled { status.warnings.append("\(name) is disabled") }
            if endpoint.failed > 0 { status.warnings.append("\(name) has \(endpoint.failed) failed deliveries (replayable)") }
            if endpoint.retrying > 0 { status.warnings.append("\(name) has \(endpoint.retrying) deliveries being retried") }
        }
    }

    /// The local services: `localPort` (the ingest service, or `checkin dev`, which runs all
    /// three), then the next two ports for the evaluator and the notifier unless the first runs them.
    private func localServices() async -> [PipelineStatus.ServiceReadiness] {
        let first = await readiness("http://127.0.0.1:\(localPort)/ready")
        var services = [first]
        for (part, port) in [("evaluator", localPort + 1), ("notifier", localPort + 2)] where !first.serves.contains(part) {
            services.append(await readiness("http://127.0.0.1:\(port)/ready"))
        }
        return services
    }

    private func readiness(_ url: String) async -> PipelineStatus.ServiceReadiness {
        do {
            let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: url), timeout: .seconds(timeout.components.seconds))
            let body = try await response.body.collect(upTo: 1 << 20)
            guard let object = try? JSONSerialization.jsonObject(with: Data(buffer: body)) as? [String: Any] else {
                return .init(
                    url: url, ready: false, components: [:], error: "HTTP \(response.status.code) without a readiness body")
            }
            let components = (object["components"] as? [String: Bool]) ?? [:]
            let ready = response.status.code == 200 && (object["ready"] as? Bool ?? false)
            return .init(url: url, ready: ready, components: components, serves: object["serves"] as? [String] ?? [], error: nil)
        } catch {
            return .init(url: url, ready: false, components: [:], error: NetworkErrorText.describe(error))
        }
    }
}

extension Result where Failure == any Error {
    init(catching body: () async throws -> Success) async {
        do {
            self = .success(try await body())
        } catch {
            self = .failure(error)
        }
    }
}
