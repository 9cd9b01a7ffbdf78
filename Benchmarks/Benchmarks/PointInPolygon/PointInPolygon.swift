import Benchmark
import BenchmarkWorld
import Foundation
import Geofence
import Shared

/// Point-in-polygon on one 10,000-vertex fence (a 5 km traced outline), through the
/// whole engine: index lookup, banded containment, presence. Fixes fall inside and
/// outside the polygon, near and far from its boundary.
nonisolated(unsafe) var workload: EvaluationWorkload?

let benchmarks: @Sendable () -> Void = {
    Benchmark(
        "Point in a 10,000-vertex polygon (evaluate)",
        configuration: .init(
            metrics: [.wallClock, .throughput, .mallocCountTotal], timeUnits: .nanoseconds, warmupIterations: 5,
            scalingFactor: .kilo, maxDuration: .seconds(5), maxIterations: 20_000,
            setup: {
                let region = World.Region(lat: 52.52, lon: 13.40, side: 12_000)
                var rng = World.Random(seed: 3)
                let ring = World.outline(in: region, x: 0, y: 0, radius: 5_000, vertices: 9_999, rng: &rng)
                let zone = ZoneDefinition(
                    id: "park", name: "Park", checkOutEnabled: true,
                    fences: [FenceDefinition(id: "outline", geometry: .polygon([ring]))])
                workload = try EvaluationWorkload(zones: [zone], region: region, devices: 1_000, fixesPerDevice: 200)
            },
            teardown: { workload = nil })
    ) { benchmark in
        guard let workload else { return }
        var events = 0
        for _ in benchmark.scaledIterations { events &+= workload.evaluateNext() }
        blackHole(events)
    }
}
