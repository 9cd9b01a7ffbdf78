import Foundation
import Logging
import Metrics
import ServiceLifecycle

/// Deletes what is kept no longer than a retention, in the background: every `interval`
/// one pass of `purge` (which works in small statements with pauses between), counted in
/// `counter`. Every process of the service runs one; passes side by side skip each
/// other's rows, so the work is never done twice over.
package final class RetentionService: Service, Sendable {
    let name: String
    let interval: Duration
    let counter: Counter
    let logger: Logger
    /// One pass at `now`; returns how many rows it deleted.
    let purge: @Sendable (_ now: Date) async throws -> Int

    package init(
        name: String, metric: String, interval: Duration = .seconds(600), logger: Logger,
        purge: @escaping @Sendable (_ now: Date) async throws -> Int
    ) {
        self.name = name
        self.interval = interval
        self.counter = Counter(label: metric)
        self.logger = logger
        self.purge = purge
    }

    package func run() async throws {
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            do {
                // A pass waiting on an unreachable database must not hold up a shutdown.
                try await cancelWhenGracefulShutdown { try await self.pass(now: Date()) }
            } catch is CancellationError {
                // Shutting down.
            } catch {
                logger.warning("retention pass failed", metadata: ["what": "\(name)", "error": "\(String(reflecting: error))"])
            }
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: self.interval) }
        }
    }

    /// One pass at `now`, counted; returns how many rows it deleted.
    @discardableResult
    package func pass(now: Date) async throws -> Int {
        let purged = try await purge(now)
        if purged > 0 {
            counter.increment(by: purged)
            logger.info("purged past retention", metadata: ["what": "\(name)", "rows": "\(purged)"])
        }
        return purged
    }
}
