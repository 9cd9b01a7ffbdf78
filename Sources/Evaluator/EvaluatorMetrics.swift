import Metrics
import Shared

/// Series of the evaluator that operators alert on, created with the evaluator so that
/// they are exported (at 0) before anything happened: an alert or a dashboard panel
/// over a series that does not exist yet would say nothing.
package struct EvaluatorMetrics: Sendable {
    /// Records sent to `checkin.fixes.dlq` because they are not valid fixes. (Transient
    /// failures, poison records and their dead letters are `ProcessingHealth`'s; stalled
    /// partitions are `PartitionStallWatchdog`'s.)
    package let invalidFixDeadLetters = Counter(
        label: "checkin_evaluator_dead_letters_total", dimensions: [("reason", "invalid-fix")])
    /// The zones the engine in use was built from.
    package let zonesLoaded = Gauge(label: "checkin_evaluator_zones_loaded")
    package let fencesLoaded = Gauge(label: "checkin_evaluator_fences_loaded")
    package let zonesCatalogVersion = Gauge(label: "checkin_evaluator_zones_catalog_version")
    package let zonesBuildSeconds = Gauge(label: "checkin_evaluator_zones_build_seconds")
    /// Projects whose stored zones do not build, evaluated with their last good zones
    /// (or without zones, if this worker never built good ones): alert on non-zero.
    package let projectsWithInvalidZones = Gauge(label: "checkin_evaluator_projects_with_invalid_zones")

    /// Builds of a project's stored zones that failed.
    func zoneBuildFailures(projectId: String) -> Counter {
        Counter(label: "checkin_evaluator_zone_build_failures_total", dimensions: [("project", projectId)])
    }

    /// Decision entries by outcome and reason ("none" for entries without one): how often each
    /// rule keeps devices from checking in (docs/evaluation-rules.md#reason-codes).
    func decisions(outcome: DecisionOutcome, reason: DecisionReason?) -> Counter {
        Counter(
            label: "checkin_evaluator_decisions_total",
            dimensions: [("outcome", outcome.rawValue), ("reason", reason?.rawValue ?? "none")])
    }

    package init() {
        projectsWithInvalidZones.record(0)
    }

    /// Records the engine just swapped in.
    func recordZonesLoaded(zones: Int, fences: Int, version: Int64, buildTime: Duration) {
        zonesLoaded.record(zones)
        fencesLoaded.record(fences)
        zonesCatalogVersion.record(version)
        zonesBuildSeconds.record(buildTime.seconds)
    }
}
