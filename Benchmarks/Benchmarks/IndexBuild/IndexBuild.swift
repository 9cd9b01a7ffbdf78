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
let residentKept = BenchmarkMetric.custom("Resident kept (MB)", useScalingFactor: false)

let benchmarks: @Sendable () -> Void = {
    Benchmark(
        "Build engine and index, 1M fences",
        configuration: .init(
            metrics: [.wallClock, .peakMemoryResident, .peakMemoryResidentDelta, residentKept],
            timeUnits: .milliseconds,
            warmupIterations: 0, scalingFactor: .one, maxDuration: .seconds(60), maxIterations: 3,
            setup: {
                zones = World.zones(
                    count: 1_000_000, in: World.Region(lat: 48.85, lon: 2.35, side: 630_000), radius: 30...150,
                    polygonShare: 0.4, seed: 7)
            },
            teardown: { zones = [] })
    ) { benchmark in
        let before = World.residentBytes()
        let engine = try? GeofenceEngine(projects: [ProjectZones(projectId: "bench", zones: zones)])
        benchmark.measurement(residentKept, (World.residentBytes() - before) / 1_000_000)
        blackHole(engine)
    }
}
