import AsyncHTTPClient
import BatchProcessing
import CommandSupport
import Evaluator
import Foundation
import Ingest
import Kafka
import Logging
import NIOCore
import Notifier
import Persistence
import Shared

/// Gathers a ``PipelineStatus``: asks each service's `/ready`, Postgres for the groups'
/// incarnations, the broker for end offsets and dead letters, Postgres and the notifier's
/// current group for committed offsets, and Postgres for the delivery backlog. A source
/// that does not answer becomes a problem naming it; the others are still read.
struct PipelineStatusReader: PipelineStatusSource {
    /// Whose `/ready` to ask.
    enum Services: Sendable {
        /// The local services: the ingest (or `checkin dev`) at `firstPort`, then the next two
        /// ports for the evaluator and the notifier unless the first runs them.
        case local(firstPort: Int)
        /// These `/ready` URLs.
        case listed([String])
    }

    var services: Services
    var brokers: String
    var kafkaProperties: [String: String]
    var database: DatabaseConfiguration
    var topics: Topics
    var evaluatorGroup: String
    var notifierGroup: String
    var logger: Logger

    /// A reader of the deployment the process's settings describe: its broker, its Postgres, and
    /// its topics and groups, named by the same variables as the services'.
    init(settings: ProcessSettings, services: Services, logger: Logger) {
        self.services = services
        brokers = settings.brokers
        kafkaProperties = settings.environment.kafkaProperties
        database = settings.database
        topics = settings.topics
        evaluatorGroup = settings.environment.string("CHECKIN_EVALUATOR_GROUP", default: "checkin-evaluator")
        notifierGroup = settings.environment.string("CHECKIN_NOTIFIER_GROUP", default: "checkin-notifier")
        self.logger = logger
    }

    /// The status as `checkin status` reads it where the services run.
    func read(limits: PipelineStatusLimits) async -> PipelineStatus {
        let services: [PipelineStatus.ServiceReadiness]
        switch self.services {
        case .local(let firstPort): services = await localServices(firstPort: firstPort, timeout: limits.timeout)
        case .listed(let urls): services = await asking(urls, timeout: limits.timeout)
        }
        return await read(services: services, limits: limits)
    }

    /// The status as an ingest answers `GET /v1/status`: its own readiness first, then the
    /// services it was told to ask.
    func status(limits: PipelineStatusLimits, own: PipelineStatus.ServiceReadiness) async -> PipelineStatus {
        guard case .listed(let urls) = services else { return await read(limits: limits) }
        return await read(services: [own] + asking(urls, timeout: limits.timeout), limits: limits)
    }

    private func asking(_ urls: [String], timeout: Duration) async -> [PipelineStatus.ServiceReadiness] {
        var services: [PipelineStatus.ServiceReadiness] = []
        for url in urls { services.append(await readiness(url, timeout: timeout)) }
        return services
    }

    private func read(services: [PipelineStatus.ServiceReadiness], limits: PipelineStatusLimits) async -> PipelineStatus {
        let timeout = limits.timeout
        var status = PipelineStatus()
        status.services = services
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
        judge(&status, limits: limits)
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

    private func judge(_ status: inout PipelineStatus, limits: PipelineStatusLimits) {
        let maximumLag = limits.maximumLag
        let maximumFixAge = limits.maximumFixAge
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

    /// The local services: `firstPort` (the ingest service, or `checkin dev`, which runs all
    /// three), then the next two ports for the evaluator and the notifier unless the first runs them.
    private func localServices(firstPort: Int, timeout: Duration) async -> [PipelineStatus.ServiceReadiness] {
        let first = await readiness("http://127.0.0.1:\(firstPort)/ready", timeout: timeout)
        var services = [first]
        for (part, port) in [("evaluator", firstPort + 1), ("notifier", firstPort + 2)] where !first.serves.contains(part) {
            services.append(await readiness("http://127.0.0.1:\(port)/ready", timeout: timeout))
        }
        return services
    }

    private func readiness(_ url: String, timeout: Duration) async -> PipelineStatus.ServiceReadiness {
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
