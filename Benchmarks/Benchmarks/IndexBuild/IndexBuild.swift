import Benchmark
import BenchmarkWorld
import Foundation
import Geofence
import Shared

/// Building the engine (validation, compiled shapes, spatial index) for 1M fences:
/// 60 % circles, 40 % polygons of 4 to 200 vertices over 630 km x 630 km. The zones
/// are generated before the measurement; the resident-memory delta is what the
/// build adds on top of them at its peak (the engine plus the build's scratch), and
/// "resident kept" what is still resident once the build is done (the engine).
nonisolated(unsafe) var zones: [ZoneDefinition] = []
/// The engine evaluating fixes while a zones change builds its successor.
nonisolated(unsafe) var engineInUse: GeofenceEngine?
let residentKept = BenchmarkMetric.custom("Resident kept (MB)", useScalingFactor: false)

func millionZones() -> [ZoneDefinition] {
    World.zones(
        count: 1_000_000, in: World.Region(lat: 48.85, lon: 2.35, side: 630_000), radius: 30...150,
        polygonShare: 0.4, seed: 7)
}

/// The project that changes its zones beside the large one.
nonisolated(unsafe) var smallZones: [ZoneDefinition] = []

func thousandZones() -> [ZoneDefinition] {
    World.zones(
        count: 1_000, in: World.Region(lat: 52.52, lon: 13.40, side: 20_000), radius: 30...150, polygonShare: 0.4, seed: 11)
}

func build() -> GeofenceEngine? {
    try? GeofenceEngine(projects: [ProjectZones(projectId: "bench", zones: zones)])
}

let benchmarks: @Sendable () -> Void = {
    Benchmark(
        "Build engine and index, 1M fences",
        configuration: .init(
            metrics: [.wallClock, .peakMemoryResident, .peakMemoryResidentDelta, residentKept],
            timeUnits: .milliseconds,
            warmupIterations: 0, scalingFactor: .one, maxDuration: .seconds(60), maxIterations: 3,
            setup: { zones = millionZones() },
            teardown: { zones = [] })
    ) { benchmark in
        let before = World.residentBytes()
        let engine = build()
        benchmark.measurement(residentKept, (World.residentBytes() - before) / 1_000_000)
        blackHole(engine)
    }

    /// What an evaluator holds at the peak of a zones change: the zones just loaded,
    /// the engine still in use, and the one being built. The resident peak is the
    /// whole process's, the figure to size a worker by.
    Benchmark(
        "Rebuild 1M fences beside the engine in use",
        configuration: .init(
            metrics: [.wallClock, .peakMemoryResident, .peakMemoryResidentDelta],
            timeUnits: .milliseconds,
            warmupIterations: 0, scalingFactor: .one, maxDuration: .seconds(60), maxIterations: 3,
            setup: {
                zones = millionZones()
                engineInUse = build()
            },
            teardown: {
                zones = []
                engineInUse = nil
            })
    ) { _ in
        blackHole(build())
    }

    /// A 1k-fence project replacing its zones beside a 1M-fence project, as the evaluator
    /// does it: only the changed project's engine is built (each project has its own),
    /// while the large project's engine stays in use. The resident delta is what the
    /// change adds at its peak.
    Benchmark(
        "Zones change of a 1k-fence project beside a 1M-fence one (per-project rebuild)",
        configuration: .init(
            metrics: [.wallClock, .peakMemoryResident, .peakMemoryResidentDelta],
            timeUnits: .milliseconds,
            warmupIterations: 1, scalingFactor: .one, maxDuration: .seconds(20), maxIterations: 20,
            setup: {
                zones = millionZones()
                engineInUse = build()
                zones = []
                smallZones = thousandZones()
            },
            teardown: {
                engineInUse = nil
                smallZones = []
            })
    ) { _ in
        blackHole(try? GeofenceEngine(projects: [ProjectZones(projectId: "small", zones: smallZones)]))
    }

    /// The same change when one engine holds every project: all 1,001,000 fences are
    /// built again beside the engine in use.
    Benchmark(
        "Zones change of a 1k-fence project beside a 1M-fence one (one engine for all)",
        configuration: .init(
            metrics: [.wallClock, .peakMemoryResident, .peakMemoryResidentDelta],
            timeUnits: .milliseconds,
            warmupIterations: 0, scalingFactor: .one, maxDuration: .seconds(60), maxIterations: 3,
            setup: {
                zones = millionZones()
                smallZones = thousandZones()
                engineInUse = try? GeofenceEngine(projects: [
                    ProjectZones(projectId: "bench", zones: zones), ProjectZones(projectId: "small", zones: smallZones),
                ])
            },
            teardown: {
                zones = []
                smallZones = []
                engineInUse = nil
            })
    ) { _ in
        blackHole(
            try? GeofenceEngine(projects: [
                ProjectZones(projectId: "bench", zones: zones), ProjectZones(projectId: "small", zones: smallZones),
            ]))
    }
}
