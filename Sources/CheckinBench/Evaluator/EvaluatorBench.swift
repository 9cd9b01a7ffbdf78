import ArgumentParser
import AsyncHTTPClient
import CommandSupport
import Foundation
import Kafka
import Logging
import Persistence
import PostgresNIO
import ServiceSupport
import Shared

/// Evaluator processes alone on a backlog: a generated world's fixes are produced straight
/// to a topic of the run's own, then `--evaluators` `checkin evaluator` processes consume it
/// and the rate at which their offsets commit (in Postgres, with the states) is timed from
/// 10 % to 90 % of the backlog, so that start-up and the group join are not counted.
struct EvaluatorBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "evaluator",
        abstract: "Measure evaluator processes on a backlog.",
        discussion: """
            Fixes/s, batch time, WAL per fix and events/s on the backlog of a generated world, evaluated by \
            checkin evaluator processes of the checkin executable beside checkin-bench. \
            Uses CHECKIN_DATABASE_URL and CHECKIN_KAFKA_BROKERS (scripts/with-services.sh sets both). It reports \
            Postgres's durability settings as it finds them and never changes them: \
            scripts/postgres-durability.sh on|off sets them on the project's own clusters.
            """)

    @Option(parsing: .unconditional, help: "Fixes in the backlog.") var fixes = 200_000
    @Option(parsing: .unconditional, help: "Walking devices.") var devices = 2_000
    @Option(parsing: .unconditional, help: "Circle fences (one zone each), spread over --side-km x --side-km.") var fences = 100_000
    @Option(name: .customLong("side-km"), parsing: .unconditional, help: "Side of the square the fences cover, in km.")
    var sideKilometres = 200.0
    @Option(parsing: .unconditional, help: "Evaluator processes.") var evaluators = 1
    @Option(parsing: .unconditional, help: "First ops port of the evaluators (metrics); the others follow.") var firstPort = 18_300
    @Option(parsing: .unconditional, help: "Seed of the world.") var seed: UInt64 = 1
    @Option(parsing: .unconditional, help: "Seconds to wait for the evaluators.") var timeout = 900
    @Flag(inversion: .prefixedNo, help: "Record every fix's decision (CHECKIN_EVALUATOR_DECISIONS), as in production.")
    var decisions = true
    @Flag(help: "Print one JSON summary instead of text.") var json = false

    func validate() throws {
        guard fixes >= 1_000, devices > 0, fences > 0, evaluators > 0 else {
            throw CommandFailure("--fixes must be at least 1000; --devices, --fences and --evaluators positive", helpOf: Self.self)
        }
        guard sideKilometres > 0, sideKilometres <= 20_000 else {
            throw CommandFailure("--side-km must be more than 0 and at most 20000 km", helpOf: Self.self)
        }
        guard firstPort >= 1, firstPort + evaluators - 1 <= 65_535 else {
            throw CommandFailure("--first-port must leave a port from 1 to 65535 for each of the --evaluators", helpOf: Self.self)
        }
        guard timeout >= 1 else { throw CommandFailure("--timeout must be at least 1 second", helpOf: Self.self) }
    }

    func run() async throws {
        // Before the backlog is produced: a run without evaluators to measure stops at once.
        let checkin = try Self.checkinExecutable()
        var logger = Logger(label: "checkin.bench")
        logger.logLevel = .warning
        var environment = ProcessInfo.processInfo.environment
        if environment["CHECKIN_SECRET_KEY"] == nil {
            // The evaluators refuse to start without a key; this run seals nothing with it.
            environment["CHECKIN_SECRET_KEY"] = SecretEncryptionKey.generate().base64
        }
        let settings = try ProcessSettings(environment: EnvironmentReader(environment))
        try await settings.prepare(logger: logger)
        try await measureRun(settings: settings, environment: environment, checkin: checkin, logger: logger)
    }

    private func measureRun(settings: ProcessSettings, environment: [String: String], checkin: URL, logger: Logger) async throws {
        var environment = environment
        let run = String(UUID().uuidString.prefix(8)).lowercased()
        let project = "bench-\(run)"
        let topic = "bench.fixes.\(run)"
        let group = "bench-evaluator-\(run)"
        let world = BenchWorld(fences: fences, devices: devices, sideKilometres: sideKilometres, seed: seed)

        let conditions = try await Database.withTemporaryClient(configuration: settings.database, logger: logger) { database in
            try await ProjectStore(database: database, logger: logger).createProject(id: project, name: "Evaluator benchmark")
            let started = ContinuousClock.now
            try await ZoneStore(database: database, logger: logger).replaceZones(projectId: project, with: world.zones)
            log("zones: \(fences) fences stored in \(String(format: "%.1f", (ContinuousClock.now - started).seconds)) s")
            return try await PostgresConditions.read(database, logger: logger)
        }
        try await KafkaAdmin.createTopics(
            [(name: topic, partitions: settings.partitions)], bootstrapServers: settings.brokers,
            properties: settings.kafkaProperties, timeout: .seconds(30), logger: logger)
        try await produce(world: world, project: project, topic: topic, settings: settings, logger: logger)

        environment["CHECKIN_TOPIC_FIXES"] = topic
        environment["CHECKIN_EVALUATOR_GROUP"] = group
        environment["CHECKIN_EVALUATOR_DECISIONS"] = decisions ? "true" : "false"
        environment["CHECKIN_LOG_LEVEL"] = environment["CHECKIN_LOG_LEVEL"] ?? "warning"
        let processes = try (0..<evaluators).map { index in
            try startEvaluator(checkin, port: firstPort + index, environment: environment)
        }
        defer {
            for process in processes where process.isRunning { process.terminate() }
            for process in processes { process.waitUntilExit() }
        }
        let result = try await Database.withTemporaryClient(configuration: settings.database, logger: logger) { database in
            try await measure(database: database, group: group, topic: topic, logger: logger)
        }
        let summary = EvaluatorBenchSummary(
            fixes: fixes, devices: devices, fences: fences, evaluators: evaluators, decisions: decisions, conditions: conditions,
            window: result)
        if json { try printJSON(summary) } else { summary.printText() }
    }

    private func log(_ line: String) {
        if !json { FileHandle.standardError.write(Data("bench: \(line)\n".utf8)) }
    }

    /// Produces every fix, device by device in time order within each step, and waits for the broker's acknowledgements.
    private func produce(world: BenchWorld, project: String, topic: String, settings: ProcessSettings, logger: Logger) async throws {
        let producer = try KafkaProducer(configuration: settings.producerConfiguration(clientId: "checkin-bench"), logger: logger)
        let steps = (fixes + devices - 1) / devices
        let origin = Date().addingTimeInterval(-Double(steps + 1) * BenchWorld.secondsBetweenFixes)
        let started = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await producer.run() }
            var index = 0
            while index < fixes {
                let chunk = try (index..<min(index + 10_000, fixes)).map { index in
                    let fix = world.fix(device: index % devices, step: index / devices, project: project, origin: origin)
                    return KafkaRecord(topic: topic, key: Array(fix.deviceId.utf8), value: try fix.wireJSON())
                }
                try await producer.sendAll(chunk)
                index += chunk.count
            }
            tasks.cancelAll()
        }
        log(
            "produced \(fixes) fixes of \(devices) devices to \(topic) in \(String(format: "%.1f", (ContinuousClock.now - started).seconds)) s"
        )
    }

    /// The `checkin` built beside this program (SwiftPM's build folder, or wherever both were
    /// copied together): the evaluators measured are the service an operator runs.
    static func checkinExecutable() throws -> URL {
        let path = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
            .appendingPathComponent("checkin").path
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw CommandFailure("no checkin executable beside checkin-bench (\(path)): build both products")
        }
        return URL(fileURLWithPath: path)
    }

    private func startEvaluator(_ checkin: URL, port: Int, environment: [String: String]) throws -> Process {
        let process = Process()
        process.executableURL = checkin
        process.arguments = ["evaluator"]
        var environment = environment
        environment["CHECKIN_HTTP_PORT"] = "\(port)"
        process.environment = environment
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        return process
    }

    /// Waits for the committed offsets to pass 10 % and then 90 % of the backlog, and reads
    /// the WAL position and the evaluators' counters at both.
    private func measure(database: Database, group: String, topic: String, logger: Logger) async throws -> MeasuredWindow {
        let client = HTTPClient.shared
        let ports = (0..<evaluators).map { firstPort + $0 }
        let low = Int64(fixes / 10)
        let high = Int64(fixes * 9 / 10)
        var start: Reading?
        let deadline = ContinuousClock.now + .seconds(timeout)
        while ContinuousClock.now < deadline {
            let committed = try await committedOffsets(database, group: group, topic: topic, logger: logger)
            if start == nil, committed >= low {
                start = try await reading(committed: committed, database: database, ports: ports, client: client, logger: logger)
                log("10 % committed; timing to 90 %")
            }
            if let start, committed >= high {
                guard committed > start.committed else {
                    // One batch took the backlog from under 10 % past 90 %: there is no window to time.
                    throw CommandFailure(
                        "the backlog was committed in too few batches to time (\(committed) fixes at once); give more --fixes")
                }
                let end = try await reading(committed: committed, database: database, ports: ports, client: client, logger: logger)
                return MeasuredWindow(from: start, to: end)
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw CommandFailure("the evaluators did not commit 90 % of the backlog within \(timeout) s")
    }

    private func committedOffsets(_ database: Database, group: String, topic: String, logger: Logger) async throws -> Int64 {
        let rows = try await database.client.query(
            "SELECT COALESCE(sum(next_offset), 0)::int8 FROM consumer_offsets WHERE consumer_group = \(group) AND topic = \(topic)",
            logger: logger)
        var total: Int64 = 0
        for try await value in rows.decode(Int64.self) { total = value }
        return total
    }

    private func reading(committed: Int64, database: Database, ports: [Int], client: HTTPClient, logger: Logger) async throws
        -> Reading
    {
        let at = ContinuousClock.now
        var wal: Int64 = 0
        for try await value in try await database.client.query(
            "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::int8", logger: logger
        ).decode(Int64.self) {
            wal = value
        }
        // Statistics reach pg_stat_user_tables within a second or so of each commit.
        var updates: (all: Int64, hot: Int64) = (0, 0)
        for try await (all, hot) in try await database.client.query(
            "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relname = 'device_states'", logger: logger
        ).decode((Int64, Int64).self) {
            updates = (all, hot)
        }
        var metrics = EvaluatorCounters()
        for port in ports {
            let response = try await client.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/metrics"), timeout: .seconds(10))
            metrics.add(String(buffer: try await response.body.collect(upTo: 16 << 20)))
        }
        return Reading(at: at, committed: committed, walBytes: wal, stateUpdates: updates, counters: metrics)
    }
}

/// What the evaluators' /metrics said at one moment, summed over the processes.
struct EvaluatorCounters: Sendable {
    var events = 0.0
    /// Taken from the outbox once the broker acknowledged them.
    var published = 0.0
    /// Cumulative count of batches per `le` bucket of `checkin_evaluator_batch_seconds`.
    var batchBuckets: [Double: Double] = [:]

    mutating func add(_ text: String) {
        for line in text.split(separator: "\n") {
            guard let value = line.split(separator: " ").last.flatMap({ Double($0) }) else { continue }
            if line.hasPrefix("checkin_evaluator_events_total{") {
                events += value
            } else if line.hasPrefix("checkin_evaluator_events_published_total") {
                published += value
            } else if line.hasPrefix("checkin_evaluator_batch_seconds_bucket{"),
                let le = line.split(separator: "le=\"").last?.split(separator: "\"").first
            {
                let bound = le == "+Inf" ? Double.infinity : Double(le) ?? .infinity
                batchBuckets[bound, default: 0] += value
            }
        }
    }
}

struct Reading: Sendable {
    var at: ContinuousClock.Instant
    var committed: Int64
    var walBytes: Int64
    /// `device_states` rows updated so far, and how many of them in place (HOT, no index entry).
    var stateUpdates: (all: Int64, hot: Int64)
    var counters: EvaluatorCounters
}

/// The steady state between two readings.
struct MeasuredWindow: Codable, Sendable {
    var fixes: Int64
    var seconds: Double
    var fixesPerSecond: Double
    var eventsPerSecond: Double
    var eventsPer100Fixes: Double
    var publishedEventsPerSecond: Double
    var walBytesPerFix: Double
    /// The share of device state updates that stayed on their page (HOT).
    var stateUpdatesInPlace: Double
    var batches: Double
    /// Upper bounds of the histogram buckets holding the median and the 99th percentile batch.
    var batchP50AtMostMilliseconds: Double
    var batchP99AtMostMilliseconds: Double

    init(from start: Reading, to end: Reading) {
        fixes = end.committed - start.committed
        seconds = (end.at - start.at).seconds
        fixesPerSecond = Double(fixes) / seconds
        let events = end.counters.events - start.counters.events
        eventsPerSecond = events / seconds
        eventsPer100Fixes = fixes > 0 ? events * 100 / Double(fixes) : 0
        publishedEventsPerSecond = (end.counters.published - start.counters.published) / seconds
        walBytesPerFix = fixes > 0 ? Double(end.walBytes - start.walBytes) / Double(fixes) : 0
        let updated = end.stateUpdates.all - start.stateUpdates.all
        stateUpdatesInPlace = updated > 0 ? Double(end.stateUpdates.hot - start.stateUpdates.hot) / Double(updated) : 0
        let bounds = end.counters.batchBuckets.keys.sorted()
        let counts = bounds.map { (end.counters.batchBuckets[$0] ?? 0) - (start.counters.batchBuckets[$0] ?? 0) }
        batches = counts.last ?? 0
        func quantile(_ q: Double) -> Double {
            guard let total = counts.last, total > 0 else { return 0 }
            let index = counts.firstIndex { $0 >= q * total } ?? bounds.count - 1
            return bounds[index] * 1000
        }
        batchP50AtMostMilliseconds = quantile(0.5)
        batchP99AtMostMilliseconds = quantile(0.99)
    }
}

/// The Postgres settings a figure depends on, read from the server.
struct PostgresConditions: Codable, Sendable {
    var fsync: String
    var synchronousCommit: String
    var fullPageWrites: String
    var sharedBuffers: String

    static func read(_ database: Database, logger: Logger) async throws -> PostgresConditions {
        func show(_ name: String) async throws -> String {
            var value = ""
            for try await text in try await database.client.query("SHOW \(unescaped: name)", logger: logger).decode(String.self) {
                value = text
            }
            return value
        }
        return PostgresConditions(
            fsync: try await show("fsync"), synchronousCommit: try await show("synchronous_commit"),
            fullPageWrites: try await show("full_page_writes"), sharedBuffers: try await show("shared_buffers"))
    }
}

struct EvaluatorBenchSummary: Codable, Sendable {
    var fixes: Int
    var devices: Int
    var fences: Int
    var evaluators: Int
    /// Whether every fix's decision record was written.
    var decisions: Bool
    var conditions: PostgresConditions
    var window: MeasuredWindow

    func printText() {
        print(
            "evaluator: \(evaluators) process(es), \(fixes) fixes of \(devices) devices, \(fences) fences, decision records \(decisions ? "on" : "off"); Postgres fsync=\(conditions.fsync), synchronous_commit=\(conditions.synchronousCommit), full_page_writes=\(conditions.fullPageWrites), shared_buffers=\(conditions.sharedBuffers)"
        )
        print(
            String(
                format:
                    "steady state (10-90 %% of the backlog): %.0f fixes/s, %.0f events/s decided (%.2f per 100 fixes) and %.0f/s published, %.0f WAL bytes per fix, %.0f %% of state updates in place (HOT); %.0f batches, p50 <= %.0f ms, p99 <= %.0f ms",
                window.fixesPerSecond, window.eventsPerSecond, window.eventsPer100Fixes, window.publishedEventsPerSecond,
                window.walBytesPerFix, window.stateUpdatesInPlace * 100, window.batches,
                window.batchP50AtMostMilliseconds, window.batchP99AtMostMilliseconds))
    }
}
