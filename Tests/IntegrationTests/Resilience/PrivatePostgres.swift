import Foundation

/// A Postgres cluster of one test's own, started by the project's script, so that the
/// test can stop and restart it without disturbing the tests that share the other one.
final class PrivatePostgres: @unchecked Sendable {
    let directory: URL
    private(set) var url = ""

    init() throws {
        directory = URL(fileURLWithPath: "/tmp").appendingPathComponent("checkin-pg-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        // The postgres user (when tests run as root) must reach the cluster inside.
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: directory.path)
    }

    /// Starts the cluster (created on first start); keeps its port across restarts.
    func start() throws {
        let output = try run("start")
        url = output.split(separator: "\n").last.map(String.init) ?? ""
        guard url.hasPrefix("postgres://") else { throw TestFailure("private Postgres did not start: \(output)") }
    }

    func stop() throws {
        _ = try run("stop")
    }

    /// Stops it for good and removes its files.
    func destroy() {
        _ = try? run("stop")
        try? FileManager.default.removeItem(at: directory)
    }

    private func run(_ command: String) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = [Self.repositoryRoot.appendingPathComponent("scripts/postgres.sh").path, command]
        var environment = ProcessInfo.processInfo.environment
        environment["CHECKIN_POSTGRES_DIR"] = directory.appendingPathComponent("cluster").path
        environment["CHECKIN_RUN_DIR"] = directory.path
        // A restart keeps the port the first start picked (read from the run directory).
        environment["CHECKIN_POSTGRES_PORT"] = url.isEmpty ? "0" : String(url.split(separator: ":").last?.split(separator: "/").first ?? "0")
        process.environment = environment
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        guard process.terminationStatus == 0 else { throw TestFailure("postgres.sh \(command) failed: \(text)") }
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
