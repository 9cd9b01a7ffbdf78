import Benchmark
import BenchmarkWorld
import Foundation
import Geofence

/// Fixes per second on one core, no I/O: each iteration evaluates 1,000 fixes of
/// 5,000 devices walking through the region (scaled metrics are per fix).
nonisolated(unsafe) var workloads: [String: EvaluationWorkload] = [:]

let benchmarks: @Sendable () -> Void = {
    func evaluation(_ name: String, count: Int, region: World.Region, radius: ClosedRange<Double>) {
        Benchmark(
            name,
            configuration: .init(
                metrics: [.wallClock, .throughput, .mallocCountTotal], timeUnits: .nanoseconds, warmupIterations: 5,
                scalingFactor: .kilo, maxDuration: .seconds(8), maxIterations: 20_000,
                setup: {
                    let zones = World.zones(count: count, in: region, radius: radius, polygonShare: 0.4, seed: 7)
                    workloads[name] = try EvaluationWorkload(
                        zones: zones, region: region, devices: 5_000, fixesPerDevice: 100)
                },
                teardown: { workloads[name] = nil })
        ) { benchmark in
            guard let workload = workloads[name] else { return }
            var events = 0
            for _ in benchmark.scaledIterations { events &+= workload.evaluateNext() }
            blackHole(events)
        }
    }

    // About 2.5 fences per km² with fences of 30-150 m: a fix is inside 0 to 3 fences.
    evaluation(
        "Evaluate, 100k fences over 200 km x 200 km", count: 100_000,
        region: World.Region(lat: 48.85, lon: 2.35, side: 200_000), radius: 30...150)
    evaluation(
        "Evaluate, 1M fences over 630 km x 630 km", count: 1_000_000,
        region: World.Region(lat: 48.85, lon: 2.35, side: 630_000), radius: 30...150)
    // Downtown: 400 fences per km², 15-60 m across.
    evaluation(
        "Evaluate, downtown 10k fences over 5 km x 5 km", count: 10_000,
        region: World.Region(lat: 40.75, lon: -73.99, side: 5_000), radius: 15...60)
}
