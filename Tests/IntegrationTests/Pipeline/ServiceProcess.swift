import AsyncHTTPClient
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// One `checkin` service running as a real child process, so that a test can kill
/// it with SIGKILL (no graceful anything) and start it again.
final class ServiceProcess: @unchecked Sendable {
    let name: String
    let arguments: [String]
    let environment: [String: String]
    let logFile: URL
    /// The user the process runs as (through `setpriv`), so that a firewall rule can match
    /// its traffic alone; nil: this process's user.
    let user: String?
    private var process: Process?

    init(name: String, arguments: [String], environment: [String: String], logDirectory: URL, user: String? = nil) {
        self.name = name
        self.arguments = arguments
        self.environment = environment
        self.logFile = logDirectory.appendingPathComponent("\(name).log")
        self.user = user
    }

    /// The `checkin` executable built next to the test bundle (or `CHECKIN_BINARY`); with
    /// `named: "checkin-bench"`, the load and benchmark executable built beside it.
    static func executable(named name: String = "checkin") throws -> URL {
        if let path = ProcessInfo.processInfo.environment["CHECKIN_BINARY"] {
            let checkin = URL(fileURLWithPath: path)
            return name == "checkin" ? checkin : checkin.deletingLastPathComponent().appendingPathComponent(name)
        }
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = directory.appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            directory.deleteLastPathComponent()
        }
        throw TestFailure("the \(name) executable was not found next to \(CommandLine.arguments[0]); build it or set CHECKIN_BINARY")
    }

    func start() throws {
        if !FileManager.default.fileExists(atPath: logFile.path) {
            _ = FileManager.default.createFile(atPath: logFile.path, contents: nil)
        }
        let log = try FileHandle(forWritingTo: logFile)
        log.seekToEndOfFile()
        let process = Process()
        if let user {
            guard let account = getpwnam(user) else { throw TestFailure("no user \(user) on this machine") }
            // setpriv execs the service: the pid, and so signals, are the service's.
            process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
            process.arguments =
                [
                    "--reuid=\(account.pointee.pw_uid)", "--regid=\(account.pointee.pw_gid)", "--clear-groups", "--",
                    try Self.executable().path,
                ] + arguments
        } else {
            process.executableURL = try Self.executable()
            process.arguments = arguments
        }
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.standardOutput = log
        process.standardError = log
        try process.run()
        self.process = process
    }

    /// SIGKILL: the process gets no chance to flush, commit or say goodbye.
    func kill() {
        guard let process, process.isRunning else { return }
        Glibc.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// Sends a signal: SIGSTOP freezes the process (no heartbeats, nothing), SIGCONT resumes it.
    func signal(_ number: Int32) {
        guard let process, process.isRunning else { return }
        Glibc.kill(process.processIdentifier, number)
    }

    var isRunning: Bool { process?.isRunning ?? false }

    /// The running process's id.
    var processIdentifier: Int32? { process?.processIdentifier }

    /// SIGTERM, then how long the process took to exit (nil: it did not within `limit`, and was killed).
    func terminate(within limit: TimeInterval) async -> TimeInterval? {
        guard let process, process.isRunning else { return 0 }
        let started = Date()
        process.terminate()
        while process.isRunning && Date().timeIntervalSince(started) < limit { try? await Task.sleep(for: .milliseconds(20)) }
        if process.isRunning {
            kill()
            return nil
        }
        return Date().timeIntervalSince(started)
    }

    /// SIGTERM, then SIGKILL if it has not stopped within `grace`. It sleeps while it waits, so
    /// that the thread it runs on serves the tests beside it meanwhile, and waits its whole
    /// grace even in a cancelled test, which must not leave the process running.
    func stop(grace: TimeInterval = 10) async {
        guard let process, process.isRunning else { return }
        process.terminate()
        let deadline = ContinuousClock.now + .milliseconds(Int(grace * 1000))
        while process.isRunning && ContinuousClock.now < deadline { await pauseEvenIfCancelled(for: .milliseconds(50)) }
        guard process.isRunning else { return }
        Glibc.kill(process.processIdentifier, SIGKILL)
        while process.isRunning { await pauseEvenIfCancelled(for: .milliseconds(20)) }
    }

    /// Waits for the process to end by itself, sleeping rather than holding a thread of the
    /// cooperative pool; its exit status, or nil if it still runs after `timeout`.
    func exitStatus(within timeout: Duration) async -> Int32? {
        guard let process else { return nil }
        let deadline = ContinuousClock.now + timeout
        while process.isRunning && ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(50)) }
        return process.isRunning ? nil : process.terminationStatus
    }

    var log: String { (try? String(contentsOf: logFile, encoding: .utf8)) ?? "" }

    /// The log's last lines about this test's work: the zone reloads that other tests'
    /// projects cause in the shared database are left out.
    func logTail(lines: Int = 60) -> String {
        log.split(separator: "\n").filter { !$0.contains("zones loaded") }.suffix(lines).joined(separator: "\n")
    }
}

/// A TCP port nothing listens on right now.
func freePort() throws -> Int {
    let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard socket >= 0 else { throw TestFailure("socket() failed") }
    defer { close(socket) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(socket, $0, length) }
    }
    guard bound == 0 else { throw TestFailure("bind() failed") }
    let named = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) }
    }
    guard named == 0 else { throw TestFailure("getsockname() failed") }
    return Int(UInt16(bigEndian: address.sin_port))
}

/// Waits until a service started by a test answers `GET /health`.
func waitForHealth(port: Int) async throws {
    let deadline = ContinuousClock.now + .seconds(60)
    while ContinuousClock.now < deadline {
        let request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/health")
        if let response = try? await HTTPClient.shared.execute(request, timeout: .seconds(2)), response.status == .ok {
            return
        }
        try await Task.sleep(for: .milliseconds(200))
    }
    throw TestFailure("the service on port \(port) did not become healthy in 60 s")
}

extension Process {
    /// Stops a helper program (a partner, a TLS server) at once. SIGKILL, not SIGTERM: a program
    /// the test process starts inherits its signal mask, in which SIGTERM is blocked (seen in
    /// `/proc/<pid>/status`: pending, never delivered), and would outlive the test.
    func stopAtOnce() {
        if isRunning { kill(processIdentifier, SIGKILL) }
    }
}
