import Foundation
import Logging
import NIOConcurrencyHelpers
import Persistence
import ServiceLifecycle

/// Records when API keys were last used, coarsely: requests only note their key in memory,
/// and every `interval` the keys noted since are written in one statement. A key's
/// `lastUsedAt` is so at most `interval` behind, and no request waits for a write.
public final class KeyUsageRecorder: Service, Sendable {
    let projects: ProjectStore
    let interval: Duration
    let logger: Logger
    private let noted = NIOLockedValueBox<Set<String>>([])

    public init(projects: ProjectStore, interval: Duration = .seconds(60), logger: Logger = Logger(label: "checkin.keys")) {
        self.projects = projects
        self.interval = interval
        self.logger = logger
    }

    /// At most this many keys wait for a flush; beyond, a key's use is not recorded this round.
    static let capacity = 100_000

    func note(_ keyId: String) {
        noted.withLockedValue { noted in
            if noted.count < Self.capacity { noted.insert(keyId) }
        }
    }

    /// Writes the keys noted since the last flush, as used now.
    public func flush() async throws {
        let keyIds = noted.withLockedValue { noted in
            defer { noted.removeAll() }
            return Array(noted)
        }
        try await projects.recordUse(keyIds: keyIds, at: Date())
    }

    public func run() async throws {
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
