import Foundation
import Shared

/// Two fences of restart-capable zones closer together than restart mode can tell apart.
///
/// A restart-mode fix comes from a coarse source (the app was relaunched by a
/// significant-location change), so the engine treats every fence as its minimum
/// enclosing circle widened by `restartTolerance`; fences of different zones that
/// close together will be entered together. The management API answers with these
/// as warnings: the zones are stored all the same (docs/evaluation-rules.md#fence-lint).
public struct FenceProximity: Sendable, Equatable, Codable, CustomStringConvertible {
    public var zoneId: String
    public var fenceId: String
    public var otherZoneId: String
    public var otherFenceId: String
    /// Metres between the two fences' enclosing circles, perimeter to perimeter, to
    /// a tenth of a metre; 0 when they overlap.
    public var distance: Double
    /// The warning in words, for people reading the API's answer.
    public var message: String

    public init(zoneId: String, fenceId: String, otherZoneId: String, otherFenceId: String, distance: Double) {
        self.zoneId = zoneId
        self.fenceId = fenceId
        self.otherZoneId = otherZoneId
        self.otherFenceId = otherFenceId
        self.distance = (distance * 10).rounded() / 10
        message =
            "fence '\(fenceId)' of zone '\(zoneId)' and fence '\(otherFenceId)' of zone '\(otherZoneId)' are "
            + "\(Int(distance.rounded())) m apart; restart-mode fixes cannot tell fences closer than "
            + "\(Int(FenceLint.separation)) m apart"
    }

    public var description: String { message }
}

/// What the fence lint found: the first pairs, in document order, and how many there are in all.
public struct FenceLintReport: Sendable, Equatable, Codable {
    public var warnings: [FenceProximity]
    public var total: Int

    public init(warnings: [FenceProximity], total: Int) {
        self.warnings = warnings
        self.total = total
    }
}

public enum FenceLint {
    /// The separation the iOS guidance asks of region-monitored fences.
    public static let separation = 500.0

    /// Lints a zones document on its own; throws `ZoneValidationError` if it is not valid.
    public static func check(_ document: ZonesDocument, limit: Int = 100) throws -> FenceLintReport {
        let engine = try GeofenceEngine(projects: [ProjectZones(projectId: "", zones: document.zones)])
        return check(engine, projectId: "", limit: limit)
    }

    /// Pairs of fences of different restart-capable zones (enabled, no condition that
    /// restart mode never meets) within `separation` metres of each other.
    ///
    /// Measured between enclosing circles, the shapes restart mode evaluates, through
    /// the engine's spatial index, so a project of a million fences is linted in
    /// about the time the index takes to build.
    public static func check(_ engine: GeofenceEngine, projectId: String, limit: Int = 100) -> FenceLintReport {
        let tables = engine.tables
        guard let project = tables.projects[projectId] else { return FenceLintReport(warnings: [], total: 0) }
        func isRestartCapable(_ fence: CompiledFence) -> Bool {
            guard fence.project == project, fence.kind != .geoline else { return false }
            let zone = tables.zones[Int(fence.zone)]
            return zone.enabled && !zone.needsPreciseFix
        }
        // Fences are checked on every core; each range keeps its first `limit` pairs, in order.
        let chunks = ParallelMap.chunks(count: tables.fences.count) { range in
            var found: [FenceProximity] = []
            var total = 0
            var candidates: [Int32] = []
            for f in range {
                let fence = tables.fences[f]
                guard isRestartCapable(fence) else { continue }
                let near = BoundingBox.around(lat: fence.centreLat, lon: fence.centreLon, radius: fence.radius + separation)
                candidates.removeAll(keepingCapacity: true)
                // Each pair once, from its first fence in document order.
                engine.areaIndex.forEachCandidate(in: near) { entry in
                    if entry.id > Int32(f) { candidates.append(entry.id) }
                }
                candidates.sort()
                for (i, o) in candidates.enumerated() where i == 0 || candidates[i - 1] != o {
                    let other = tables.fences[Int(o)]
                    let reach = fence.radius + other.radius + separation
                    // Latitude alone bounds the distance from below: most candidates end here, without trigonometry.
                    guard abs(other.centreLat - fence.centreLat) * Earth.metresPerDegree < reach,
                        other.zone != fence.zone, isRestartCapable(other)
                    else { continue }
                    let centres = Earth.distance(
                        lat1: fence.centreLat, lon1: fence.centreLon, lat2: other.centreLat, lon2: other.centreLon)
                    guard centres < reach else { continue }
                    total += 1
                    if found.count < limit {
                        found.append(
                            FenceProximity(
                                zoneId: tables.zones[Int(fence.zone)].summary.id, fenceId: tables.fenceInfos[f].id,
                                otherZoneId: tables.zones[Int(other.zone)].summary.id,
                                otherFenceId: tables.fenceInfos[Int(o)].id,
                                distance: max(0, centres - fence.radius - other.radius)))
                    }
                }
            }
            return (found, total)
        }
        let warnings = Array(chunks.lazy.flatMap(\.0).prefix(limit))
        let total = chunks.reduce(0) { $0 + $1.1 }
        return FenceLintReport(warnings: warnings, total: total)
    }
}
