import BatchProcessing
import Geofence
import Logging
import NIOConcurrencyHelpers
import Persistence
import ServiceLifecycle
import Shared

/// The engine built from the zones in Postgres. It is rebuilt off the hot path
/// when the catalog version changes and swapped in whole, so a batch is always
/// evaluated against one consistent set of zones.
public final class ZoneCatalog: Service, Sendable {
    struct Loaded {
        var version: Int64
        var engine: GeofenceEngine
    }

    let zones: ZoneStore
    let configuration: EngineConfiguration
    let refreshInterval: Duration
    /// A load that takes longer (Postgres restarting, say) is abandoned and tried again.
    let loadTimeout: Duration
    let logger: Logger
    /// Told once the first engine is in place, for `/ready`.
    let onFirstLoad: @Sendable () -> Void
    let metrics: EvaluatorMetrics
    private let loaded = NIOLockedValueBox<Loaded?>(nil)
    /// One rebuild at a time: the refresh loop and a first `engine()` call can race at start.
    private let rebuilding = RefreshLock()

    public init(
        zones: ZoneStore, configuration: EngineConfiguration, refreshInterval: Duration,
        loadTimeout: Duration = .seconds(120), logger: Logger, onFirstLoad: @escaping @Sendable () -> Void = {},
        metrics: EvaluatorMetrics = EvaluatorMetrics()
    ) {
        self.zones = zones
        self.configuration = configuration
        self.refreshInterval = refreshInterval
        self.loadTimeout = loadTimeout
        self.logger = logger
        self.onFirstLoad = onFirstLoad
        self.metrics = metrics
    }

    public func run() async throws {
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            do {
                // A load waiting on an unreachable database must not hold up a shutdown.
                try await cancelWhenGracefulShutdown {
                    try await withTimeout(self.loadTimeout, component: "database") { try await self.refresh() }
                }
            } catch {
                logger.error("could not refresh zones", metadata: ["error": "\(String(reflecting: error))"])
            }
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: self.refreshInterval) }
        }
    }

    /// Waits until the first engine is in place; false when the process stops first.
    public func waitUntilLoaded() async -> Bool {
        while loaded.withLockedValue({ $0 == nil }) {
            if Task.isCancelled || Task.isShuttingDownGracefully { return false }
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: .milliseconds(100)) }
        }
        return true
    }

    /// The current engine, loading it first if nothing has been loaded yet.
    public func engine() async throws -> GeofenceEngine {
        if let loaded = loaded.withLockedValue({ $0 }) { return loaded.engine }
        try await refresh()
        guard let loaded = loaded.withLockedValue({ $0 }) else { throw ZoneCatalogError.notLoaded }
        return loaded.engine
    }

    /// Rebuilds the engine if the zones changed since the last build.
    public func refresh() async throws {
        await rebuilding.lock()
        do {
            try await rebuildIfChanged()
            await rebuilding.unlock()
        } catch {
            await rebuilding.unlock()
            throw error
        }
    }

    private func rebuildIfChanged() async throws {
        let latest = try await zones.catalogVersion()
        if loaded.withLockedValue({ $0?.version }) == latest { return }
        // The version comes from the same snapshot as the zones, so the engine is labelled
        // with exactly the catalog it was built from.
        let catalog = try await zones.catalog()
        let version = catalog.version
        let projects = catalog.projects.map { ProjectZones(projectId: $0.projectId, zones: $0.zones) }
        let started = ContinuousClock.now
        let engine = buildSkippingInvalidProjects(projects)
        let buildTime = ContinuousClock.now - started
        let (first, swapped) = loaded.withLockedValue { current in
            let first = current == nil
            guard (current?.version ?? .min) < version else { return (first, false) }
            current = Loaded(version: version, engine: engine)
            return (first, true)
        }
        if swapped {
            metrics.recordZonesLoaded(
                zones: projects.reduce(0) { $0 + $1.zones.count },
                fences: projects.reduce(0) { $0 + $1.zones.reduce(0) { $0 + $1.fences.count } }, version: version,
                buildTime: buildTime)
        }
        if first { onFirstLoad() }
        logger.info(
            "zones loaded",
            metadata: [
                "version": "\(version)", "projects": "\(projects.count)",
                "zones": "\(projects.reduce(0) { $0 + $1.zones.count })",
                "buildTime": "\(buildTime)",
            ])
    }

    /// Zones are validated when they are stored; should invalid ones reach the
    /// database anyway, only their project is left out, not everyone's.
    private func buildSkippingInvalidProjects(_ projects: [ProjectZones]) -> GeofenceEngine {
        if let engine = try? GeofenceEngine(projects: projects, configuration: configuration) { return engine }
        var valid: [ProjectZones] = []
        for project in projects {
            do {
                _ = try GeofenceEngine(projects: [project], configuration: configuration)
                valid.append(project)
            } catch {
                logger.error(
                    "project's zones are invalid and are not evaluated",
                    metadata: ["projectId": "\(project.projectId)", "error": "\(error)"])
            }
        }
        return (try? GeofenceEngine(projects: valid, configuration: configuration))
            ?? (try! GeofenceEngine(projects: [], configuration: configuration))
    }
}

enum ZoneCatalogError: Error {
    case notLoaded
}

/// A lock that suspends instead of blocking a thread, for work that awaits.
actor RefreshLock {
    private var held = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    func lock() async {
        if !held {
            held = true
            return
        }
        await withCheckedContinuation { waiters.append($0) }
    }

    func unlock() {
        if waiters.isEmpty {
            held = false
        } else {
            waiters.removeFirst().resume()
        }
    }
}
