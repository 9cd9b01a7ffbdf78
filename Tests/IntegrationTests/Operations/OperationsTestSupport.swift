import AsyncHTTPClient
import Foundation
import NIOConcurrencyHelpers
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A Tansu broker of one test's own (memory only), so that the test can stop it
/// under a running pipeline without disturbing the other tests' broker.
final class PrivateBroker: @unchecked Sendable {
    let address: String
    private let process = Process()

    init(logDirectory: URL) throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        let binary = root.appendingPathComponent(".local/bin/tansu")
        guard FileManager.default.isExecutableFile(atPath: binary.path) else {
            throw TestFailure("no broker binary at \(binary.path): run scripts/setup.sh")
        }
        address = "127.0.0.1:\(try freePort())"
        let log = logDirectory.appendingPathComponent("broker.log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        process.executableURL = binary
        process.arguments = [
            "broker", "--listener-url", "tcp://\(address)", "--advertised-listener-url", "tcp://\(address)",
            "--storage-engine", "memory://tansu/",
        ]
        let handle = try FileHandle(forWritingTo: log)
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
    }

    /// SIGKILL, as a broker that crashed or a host that went away; returns once it has ended.
    func stop() async {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        while process.isRunning { await pauseEvenIfCancelled(for: .milliseconds(20)) }
    }
}

/// What a `checkin` command run by a test printed, and how it ended.
struct CommandOutcome {
    var exitCode: Int32
    var standardOutput: String
    var standardError: String

    /// Runs the built `checkin` with these arguments, the test process's environment plus `environment`.
    static func run(_ arguments: [String], environment: [String: String] = [:]) async throws -> CommandOutcome {
        try await run(executable: try ServiceProcess.executable(), arguments: arguments, environment: environment)
    }

    /// Runs the built `checkin-bench` (load and benchmarks) with these arguments, as `run` does `checkin`.
    static func runBench(_ arguments: [String], environment: [String: String] = [:]) async throws -> CommandOutcome {
        try await run(executable: try ServiceProcess.executable(named: "checkin-bench"), arguments: arguments, environment: environment)
    }

    /// Runs a program to its end without holding a thread of the test process while it runs
    /// (a page the program loads may be served by this very process). Output goes through
    /// files, so neither stream can fill up and stall it. Past `timeout` the program is killed
    /// and the run fails naming it.
    static func run(
        executable: URL, arguments: [String], environment: [String: String] = [:], timeout: Duration = .seconds(120)
    ) async throws -> CommandOutcome {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("checkin-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let out = directory.appendingPathComponent("out")
        let err = directory.appendingPathComponent("err")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        _ = FileManager.default.createFile(atPath: err.path, contents: nil)
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.standardOutput = try FileHandle(forWritingTo: out)
        process.standardError = try FileHandle(forWritingTo: err)
        let timedOut = NIOLockedValueBox(false)
        let code: Int32 = try await withCheckedThrowingContinuation { continuation in
            process.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
            do {
                try process.run()
            } catch {
                process.terminationHandler = nil
                continuation.resume(throwing: error)
                return
            }
            let pid = process.processIdentifier
            Task {
                try? await Task.sleep(for: timeout)
                guard process.isRunning else { return }
                timedOut.withLockedValue { $0 = true }
                kill(pid, SIGKILL)
            }
        }
        if timedOut.withLockedValue({ $0 }) {
            throw TestFailure("\(executable.lastPathComponent) \(arguments.joined(separator: " ")) did not end within \(timeout)")
        }
        return CommandOutcome(
            exitCode: code, standardOutput: try String(contentsOf: out, encoding: .utf8),
            standardError: try String(contentsOf: err, encoding: .utf8))
    }
}

/// Runs `checkin status` as an operator would, capturing what it prints and its exit code.
struct StatusRunner {
    let environment: [String: String]
    let readyURL: String

    func run(_ arguments: [String]) async throws -> CommandOutcome {
        try await CommandOutcome.run(["status", "--ready", readyURL] + arguments, environment: environment)
    }

    /// Without `--ready`: the local services from `port` on, as an operator runs it beside them.
    func runLocal(port: Int, _ arguments: [String]) async throws -> CommandOutcome {
        try await CommandOutcome.run(["status", "--local-port", String(port)] + arguments, environment: environment)
    }
}

/// `checkin status` of a remote deployment: the API's URL and the operator key, and neither
/// a database nor a broker, so that everything it prints came through the API.
struct RemoteStatusRunner {
    let url: String
    let operatorKey: String

    func run(_ arguments: [String]) async throws -> CommandOutcome {
        try await CommandOutcome.run(
            ["status"] + arguments,
            environment: [
                "CHECKIN_API_URL": url, "CHECKIN_OPERATOR_KEY": operatorKey, "CHECKIN_DATABASE_URL": "",
                "CHECKIN_KAFKA_BROKERS": "127.0.0.1:9",
            ])
    }
}

extension CommandOutcome {
    func json() throws -> StatusReport {
        try JSONDecoder().decode(StatusReport.self, from: Data(standardOutput.utf8))
    }
}

/// The parts of `checkin status --json` the tests read.
struct StatusReport: Decodable {
    struct Service: Decodable {
        var url: String
        var ready: Bool
        var serves: [String]
    }

    struct Lag: Decodable {
        var group: String
        var topic: String
        var partition: Int32
        var committed: Int64?
        var lag: Int64
    }

    struct DeadLetters: Decodable {
        var topic: String
        var lastHour: Int64
        var total: Int64
        var notSentBack: Int64?
    }

    struct Endpoint: Decodable {
        var projectId: String
        var endpointId: String
        var enabled: Bool
        var pending: Int
        var retrying: Int
        var failed: Int
    }

    struct Group: Decodable {
        var worker: String
        var incarnation: Int
        var groupId: String
    }

    var services: [Service]
    var groups: [Group]
    var lag: [Lag]
    var deadLetters: [DeadLetters]
    var deliveries: [Endpoint]
    var problems: [String]
    var warnings: [String]
}

func httpStatus(_ url: String) async throws -> Int {
    let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: url), timeout: .seconds(5))
    _ = try await response.body.collect(upTo: 16 << 20)
    return Int(response.status.code)
}

func httpBody(_ url: String) async throws -> String {
    let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: url), timeout: .seconds(5))
    return String(buffer: try await response.body.collect(upTo: 16 << 20))
}

/// Polls `condition` (errors count as not yet) until it holds, or fails with the service's log.
func waitUntil(
    _ what: String, timeout: Duration = .seconds(60), log service: ServiceProcess,
    _ condition: () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if (try? await condition()) == true { return }
        try await Task.sleep(for: .seconds(1))
    }
    throw TestFailure("timed out waiting until \(what); \(service.name) log:\n\(service.log.suffix(3000))")
}
