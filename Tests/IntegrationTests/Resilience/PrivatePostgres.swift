import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A Postgres cluster of one test's own, started by the project's script, so that the
/// test can stop and restart it without disturbing the tests that share the other one.
final class PrivatePostgres: @unchecked Sendable {
    let directory: URL
    private(set) var url = ""

    init() throws {
        // Under scripts/with-services.sh, in the run's directory: a run stopped before the test
        // could destroy its cluster (a deadline, a crash) still stops and removes it.
        let name = "checkin-pg-\(UUID().uuidString.prefix(8))"
        // The postgres user (when tests run as root) must reach the cluster inside.
        let reachable: [FileAttributeKey: Any] = [.posixPermissions: 0o755]
        if let run = ProcessInfo.processInfo.environment["CHECKIN_TEST_RUN"] {
            let clusters = URL(fileURLWithPath: run).appendingPathComponent("clusters")
            try FileManager.default.createDirectory(at: clusters, withIntermediateDirectories: true, attributes: reachable)
            directory = clusters.appendingPathComponent(name)
        } else {
            directory = URL(fileURLWithPath: "/tmp").appendingPathComponent(name)
        }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try FileManager.default.setAttributes(reachable, ofItemAtPath: directory.path)
    }

    /// Starts the cluster (created on first start); keeps its port across restarts.
    func start() async throws {
        let output = try await run("start")
        url = output.split(separator: "\n").last.map(String.init) ?? ""
        guard url.hasPrefix("postgres://") else { throw TestFailure("private Postgres did not start: \(output)") }
    }

    func stop() async throws {
        _ = try await run("stop")
    }

    /// Stops it for good and removes its files (and those in /var/tmp that postgres.sh uses
    /// instead of a directory the postgres user cannot reach).
    func destroy() async {
        _ = try? await run("stop")
        let cluster = directory.appendingPathComponent("cluster")
        if let target = try? FileManager.default.destinationOfSymbolicLink(atPath: cluster.path) {
            try? FileManager.default.removeItem(atPath: target)
        }
        try? FileManager.default.removeItem(at: directory)
    }

    private var scriptEnvironment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["CHECKIN_POSTGRES_DIR"] = directory.appendingPathComponent("cluster").path
        environment["CHECKIN_RUN_DIR"] = directory.path
        // A restart keeps the port the first start picked.
        environment["CHECKIN_POSTGRES_PORT"] =
            url.isEmpty ? "0" : String(url.split(separator: ":").last?.split(separator: "/").first ?? "0")
        return environment
    }

    /// Runs the script and waits for it without blocking a thread of the concurrency pool.
    private func run(_ command: String) async throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = [Self.repositoryRoot.appendingPathComponent("scripts/postgres.sh").path, command]
        process.environment = scriptEnvironment
        // A file, not a pipe: the server the script starts must not hold our end open.
        let outputFile = directory.appendingPathComponent("\(command).out")
        FileManager.default.createFile(atPath: outputFile.path, contents: nil)
        let output = try FileHandle(forWritingTo: outputFile)
        defer { try? output.close() }
        process.standardOutput = output
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        try process.run()
        // Reaped here rather than through Foundation's child monitoring, which was seen
        // never to report this script's end while the server it started lives on.
        let pid = process.processIdentifier
        var status: Int32 = 0
        let deadline = ContinuousClock.now + .seconds(90)
        // Even in a cancelled test: the script must not be left to start or stop a server unseen.
        while waitpid(pid, &status, WNOHANG) == 0 {
            if ContinuousClock.now > deadline { throw TestFailure("postgres.sh \(command) did not finish in 90 s") }
            await pauseEvenIfCancelled(for: .milliseconds(100))
        }
        let text = (try? String(contentsOf: outputFile, encoding: .utf8)) ?? ""
        let exitedCleanly = (status & 0x7f) == 0 && ((status >> 8) & 0xff) == 0
        guard exitedCleanly else { throw TestFailure("postgres.sh \(command) failed: \(text)") }
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static var repositoryRoot: URL {
        var directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        while directory.path != "/" {
            if FileManager.default.fileExists(atPath: directory.appendingPathComponent("scripts/postgres.sh").path) {
                return directory
            }
            directory.deleteLastPathComponent()
        }
        return URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
    }
}
