import Foundation
import Logging
import NIOConcurrencyHelpers
import Persistence
import ServiceLifecycle

/// Records when API keys were last used: requests only note their key and the time in memory,
/// and every `interval` the keys noted since are written in one statement, each with its own
/// last use (not the time of the write, which may be after the key ended). A key's `lastUsedAt`
/// is so written at most `interval` late, and no request waits for a write.
package final class KeyUsageRecorder: Service, Sendable {
    let projects: ProjectStore
    let interval: Duration
    let logger: Logger
    private let noted = NIOLockedValueBox<[String: Date]>([:])

    package init(projects: ProjectStore, interval: Duration = .seconds(60), logger: Logger = Logger(label: "checkin.keys")) {
        self.projects = projects
        self.interval = interval
        self.logger = logger
    }

    /// At most this many keys wait for a flush; beyond, a key's use is not recorded this round.
    static let capacity = 100_000

    func note(_ keyId: String, at time: Date = Date()) {
        noted.withLockedValue { noted in
            if noted.count < Self.capacity || noted[keyId] != nil { noted[keyId] = time }
        }
    }

    /// Writes the keys noted since the last flush, each as last used when it was.
    package func flush() async throws {
        let uses = noted.withLockedValue { noted in
            defer { noted.removeAll() }
            return noted
        }
        try await projects.recordUse(uses)
    }

    package func run() async throws {
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: self.interval) }
            do {
                try await flush()
            } catch {
                logger.warning("recording the use of API keys failed", metadata: ["error": "\(String(reflecting: error))"])
            }
        }
    }
}
