import ArgumentParser
import CommandSupport
import Foundation
import Ingest
import Logging
import Persistence

/// `checkin status`: one command for the on-call operator, saying whether the
/// pipeline is healthy and, when it is not, why.
struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Is the pipeline healthy? Why not?",
        discussion: """
            Readiness, lag, dead letters and deliveries in one table. \
            With CHECKIN_API_URL set, asks the API (GET /v1/status, with CHECKIN_OPERATOR_KEY), whose ingest reads the \
            rest as below and asks the services its CHECKIN_STATUS_READY_URLS names. Otherwise asks each service's /ready, the broker (CHECKIN_KAFKA_BROKERS) for end offsets and dead letters, and \
            Postgres (CHECKIN_DATABASE_URL) for the evaluators' offsets, the deliveries and the incarnation each \
            consumer group is in (the notifier's lag is read from that group); topic and group names come from the \
            same variables as the services'. Exits 1 when something is unhealthy (a service not \
            ready or not answering, the broker or Postgres away, lag or the oldest unprocessed fix above the \
            limits), listing why; dead letters, failed or retrying deliveries and disabled endpoints are warnings \
            (exit 0 unless --strict).
            """)

    @Option(
        name: .customLong("ready"),
        help: ArgumentHelp(
            "A service's /ready URL; repeat for each.",
            discussion: """
                Default: the local services, --local-port (checkin ingest, or checkin dev, which runs all three), \
                then the next two ports (evaluator, notifier) unless the first says it runs those too.
                """))
    var readyURLs: [String] = []
    @Option(
        parsing: .unconditional,
        help: """
            The first port of the local services, asked when no --ready is given (checkin dev's or the ingest's); \
            default CHECKIN_HTTP_PORT, as the services read it, or 8080.
            """)
    var localPort: Int?
    @Option(parsing: .unconditional, help: "Records a consumer group may be behind, summed over partitions, before it is unhealthy.")
    var maxLag: Int64 = 10_000
    @Option(parsing: .unconditional, help: "Seconds the oldest unprocessed fix may wait before the pipeline is unhealthy.")
    var maxFixAge: Double = 300
    @Option(parsing: .unconditional, help: "Seconds to wait for each service, the broker and Postgres.")
    var timeout: Int = 5
    @Flag(help: "Print JSON instead of tables.") var json = false
    @Flag(help: "Exit 1 on warnings too.") var strict = false

    func validate() throws {
        guard maxLag >= 0 else { throw CommandFailure("--max-lag must be 0 or more", helpOf: Self.self) }
        guard maxFixAge >= 0, maxFixAge.isFinite else {
            throw CommandFailure("--max-fix-age must be a number of seconds, 0 or more", helpOf: Self.self)
        }
        guard timeout > 0 else { throw CommandFailure("--timeout must be positive", helpOf: Self.self) }
        if let localPort, !(1...65_533).contains(localPort) {
            throw CommandFailure("--local-port must be between 1 and 65533", helpOf: Self.self)
        }
    }

    func run() async throws {
        let limits = PipelineStatusLimits(maximumLag: maxLag, maximumFixAge: maxFixAge, timeout: .seconds(timeout))
        let status: PipelineStatus
        if let remote = try RemoteSettings.fromEnvironment() {
            guard readyURLs.isEmpty, localPort == nil else {
                throw CommandFailure(
                    "--ready and --local-port name local services; with CHECKIN_API_URL set the API's ingest asks the services "
                        + "its CHECKIN_STATUS_READY_URLS names", helpOf: Self.self)
            }
            status = try await ManagementAPI(operatorOf: remote).status(limits: limits)
        } else {
            var logger = Logger(label: "checkin.status")
            logger.logLevel = .critical
            let settings = try ProcessSettings()
            // The port the local services listen on, read as they read it.
            let firstPort =
                try localPort ?? settings.environment.int("CHECKIN_HTTP_PORT", default: 8080, range: 1...65_533)
            let reader = PipelineStatusReader(
                settings: settings, services: readyURLs.isEmpty ? .local(firstPort: firstPort) : .listed(readyURLs),
                logger: logger)
            status = await reader.read(limits: limits)
        }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            encoder.dateEncodingStrategy = .iso8601
            var data = try encoder.encode(status)
            data.append(0x0A)
            FileHandle.standardOutput.write(data)
        } else {
            FileHandle.standardOutput.write(Data(StatusTable.render(status).utf8))
        }
        let failing = status.problems + (strict ? status.warnings : [])
        if !failing.isEmpty {
            FileHandle.standardError.write(Data(("unhealthy: " + failing.joined(separator: "; ") + "\n").utf8))
            throw ExitCode(1)
        }
    }
}

/// The plain-text rendering of a ``PipelineStatus``: one table per section.
enum StatusTable {
    static func render(_ status: PipelineStatus) -> String {
        var out = "SERVICES\n"
        out += table(
            ["URL", "READY", "COMPONENTS"],
            status.services.map { service in
                [
                    service.url, service.ready ? "yes" : "NO",
                    service.error
                        ?? service.components.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value ? "yes" : "NO")" }
                        .joined(separator: " "),
                ]
            })
        out += "\nCONSUMER GROUPS (the incarnation each worker is in now)\n"
        out += table(
            ["WORKER", "INCARNATION", "GROUP ID", "OFFSETS READ"],
            status.groups.map {
                [$0.worker, String($0.incarnation), $0.groupId, "\($0.offsetsGroup) (\($0.offsetsSource))"]
            })
        out += "\nLAG (records behind the end of each partition)\n"
        out += table(
            ["GROUP", "TOPIC", "PARTITION", "COMMITTED", "END", "LAG"],
            status.lag.map {
                [$0.group, $0.topic, String($0.partition), $0.committed.map(String.init) ?? "-", String($0.end), String($0.lag)]
            })
        out += "\nOLDEST UNPROCESSED FIX: "
        out += status.oldestUnprocessedFixAgeSeconds.map { String(format: "%.1f s old", $0) } ?? "none waiting"
        out += "\n\nDEAD LETTERS\n"
        out += table(
            ["TOPIC", "LAST HOUR", "TOTAL", "NOT SENT BACK"],
            status.deadLetters.map { [$0.topic, String($0.lastHour), String($0.total), $0.notSentBack.map(String.init) ?? "-"] })
        out += "\nDELIVERIES\n"
        out += table(
            ["PROJECT", "ENDPOINT", "ENABLED", "PENDING", "RETRYING", "FAILED", "URL"],
            status.deliveries.map {
                [
                    $0.projectId, $0.endpointId, $0.enabled ? "yes" : "NO", String($0.pending), String($0.retrying),
                    String($0.failed), $0.url,
                ]
            })
        out += "\n"
        if status.healthy {
            out += "HEALTHY\n"
        } else {
            out += "UNHEALTHY\n" + status.problems.map { "  - \($0)\n" }.joined()
        }
        if !status.warnings.isEmpty { out += "WARNINGS\n" + status.warnings.map { "  - \($0)\n" }.joined() }
        return out
    }

    /// Left-aligned columns; "(none)" for an empty table.
    static func table(_ header: [String], _ rows: [[String]]) -> String {
        guard !rows.isEmpty else { return "  (none)\n" }
        let all = [header] + rows
        let widths = header.indices.map { column in all.map { $0[column].count }.max() ?? 0 }
        return all.map { row in
            "  "
                + row.enumerated().map { index, cell in
                    index == row.count - 1 ? cell : cell.padding(toLength: widths[index], withPad: " ", startingAt: 0)
                }.joined(separator: "  ") + "\n"
        }.joined()
    }
}
