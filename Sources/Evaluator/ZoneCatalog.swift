import BatchProcessing
import Geofence
import Logging
import NIOConcurrencyHelpers
import Persistence
import ServiceLifecycle
import Shared

/// The engines the evaluator decides with: one per project, each built from that
/// project's zones alone, so that a change to one project's zones rebuilds its engine
/// and no other.
package struct ZoneEngines: Sendable {
    struct Project: Sendable {
        /// The project's zones version the engine was built from.
        var version: Int64
        var engine: GeofenceEngine
        var zones: Int
        var fences: Int
        /// The zones of `version` did not build: the engine is of the last zones that did.
        var zonesInvalid = false
    }

    /// The catalog version every project's engine is at least as new as.
    package let catalogVersion: Int64
    let projects: [String: Project]
    /// For projects without zones: no fence, so a device of theirs is inside nothing.
    let empty: GeofenceEngine

    /// The engine of the fix's, or the device's, project.
    package func engine(for projectId: String) -> GeofenceEngine {
        projects[projectId]?.engine ?? empty
    }

    package var configuration: EngineConfiguration { empty.configuration }
    package var zoneCount: Int { projects.values.reduce(0) { $0 + $1.zones } }
    /// Projects whose current zones do not build, evaluated with their last good zones.
    package var projectsWithInvalidZones: Int { projects.values.reduce(0) { $0 + ($1.zonesInvalid ? 1 : 0) } }
    package var fenceCount: Int { projects.values.reduce(0) { $0 + $1.fences } }
}

/// The engines built from the zones in Postgres. A project's engine is rebuilt off
/// the hot path when its zones version changes, and the set is swapped in whole, so
/// a batch is always evaluated against one consistent set of zones; projects whose
/// zones did not change keep the engine they have.
package final class ZoneCatalog: Service, Sendable {
    let zones: ZoneStore
    let configuration: EngineConfiguration
    let refreshInterval: Duration
    /// A load that takes longer (Postgres restarting, say) is abandoned and tried again.
    let loadTimeout: Duration
    let logger: Logger
    /// Told once the first engines are in place, for `/ready`.
    let onFirstLoad: @Sendable () -> Void
    let metrics: EvaluatorMetrics
    private let loaded = NIOLockedValueBox<ZoneEngines?>(nil)
    /// The engine of projects without zones (or with zones that do not build).
    private let empty: GeofenceEngine
    /// One rebuild at a time: the refresh loop and a first `engines()` call can race at start.
    private let rebuilding = RefreshLock()

    package init(
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
        // No zones: nothing to validate or index, so nothing can fail.
        self.empty = try! GeofenceEngine(projects: [], configuration: configuration)
    }

    package func run() async throws {
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

    /// Waits until the first engines are in place; false when the process stops first.
    package func waitUntilLoaded() async -> Bool {
        while loaded.withLockedValue({ $0 == nil }) {
            if Task.isCancelled || Task.isShuttingDownGracefully { return false }
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: .milliseconds(100)) }
        }
        return true
    }

    /// The current engines, loading them first if nothing has been loaded yet.
    package func engines() async throws -> ZoneEngines {
        if let loaded = loaded.withLockedValue({ $0 }) { return loaded }
        try await refresh()
        guard let loaded = loaded.withLockedValue({ $0 }) else { throw ZoneCatalogError.notLoaded }
        return loaded
    }

    /// Rebuilds the engines of the projects whose zones changed since the last build.
    package func refresh() async throws {
        await rebuilding.lock()
        do {
            try await rebuildChangedProjects()
            await rebuilding.unlock()
        } catch {
            await rebuilding.unlock()
            throw error
        }
    }

    private func rebuildChangedProjects() async throws {
        let (catalogVersion, versions) = try await zones.versions()
        let current = loaded.withLockedValue { $0 }
        if let current, current.catalogVersion == catalogVersion { return }
        var projects = (current?.projects ?? [:]).filter { versions[$0.key] != nil }
        let changed = versions.filter { projects[$0.key]?.version != $0.value }.map(\.key).sorted()
        var buildTime = Duration.zero
        if !changed.isEmpty {
            // One snapshot for every changed project; each engine is labelled with the
            // version its zones were read at.
            let snapshot = try await zones.catalog(projects: changed)
            var zonesByProject: [String: [ZoneDefinition]] = [:]
            for project in snapshot.projects { zonesByProject[project.projectId] = project.zones }
            let started = ContinuousClock.now
            for projectId in changed {
                guard let version = snapshot.projectVersions[projectId] else {
                    projects[projectId] = nil  // deleted since the versions were read
                    continue
                }
                projects[projectId] = build(
                    projectId, zones: zonesByProject[projectId] ?? [], version: version, lastGood: projects[projectId])
            }
            buildTime = ContinuousClock.now - started
        }
        let engines = ZoneEngines(catalogVersion: catalogVersion, projects: projects, empty: empty)
        let (first, swapped) = loaded.withLockedValue { current in
            let first = current == nil
            guard (current?.catalogVersion ?? .min) < catalogVersion else { return (first, false) }
            current = engines
            return (first, true)
        }
        guard swapped else { return }
        metrics.recordZonesLoaded(
            zones: engines.zoneCount, fences: engines.fenceCount, version: catalogVersion, buildTime: buildTime)
        metrics.projectsWithInvalidZones.record(engines.projectsWithInvalidZones)
        if first { onFirstLoad() }
        logger.info(
            "zones loaded",
            metadata: [
                "version": "\(catalogVersion)", "projects": "\(projects.count)", "rebuilt": "\(changed.count)",
                "zones": "\(engines.zoneCount)", "buildTime": "\(buildTime)",
            ])
    }

    /// Zones are validated when they are stored; should invalid ones reach the database
    /// anyway, only their project is affected, and it keeps the engine of its last good
    /// zones: an empty one would check its devices out of zones they are in and forget
    /// their open check-ins. Said in the log and in metrics until good zones are stored.
    /// Without a last good engine (invalid since this worker started), the project has no zones.
    private func build(
        _ projectId: String, zones: [ZoneDefinition], version: Int64, lastGood: ZoneEngines.Project?
    ) -> ZoneEngines.Project {
        let project = ProjectZones(projectId: projectId, zones: zones)
        do {
            let engine = try GeofenceEngine(projects: [project], configuration: configuration)
            return ZoneEngines.Project(
                version: version, engine: engine, zones: zones.count, fences: zones.reduce(0) { $0 + $1.fences.count })
        } catch {
            metrics.zoneBuildFailures(projectId: projectId).increment()
            guard var kept = lastGood else {
                logger.error(
                    "project's zones are invalid and no earlier zones are known; it is evaluated without zones",
                    metadata: ["projectId": "\(projectId)", "version": "\(version)", "error": "\(error)"])
                return ZoneEngines.Project(version: version, engine: empty, zones: 0, fences: 0, zonesInvalid: true)
            }
            logger.error(
                "project's zones are invalid; it keeps being evaluated with its last good zones",
                metadata: [
                    "projectId": "\(projectId)", "version": "\(version)", "lastGoodVersion": "\(kept.version)",
                    "error": "\(error)",
                ])
            // Labelled with the version read, so that the same invalid zones are not built again.
            kept.version = version
            kept.zonesInvalid = true
            return kept
        }
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
