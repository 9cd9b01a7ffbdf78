// swift-tools-version: 6.1
import PackageDescription

/// Benchmarks of the geofence engine alone, no I/O: `swift package --disable-sandbox benchmark`
/// here (release build). One executable per suite, as the benchmark plugin expects.
let package = Package(
    name: "checkin-benchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "checkin", path: ".."),
        // The runtime interposer trait needs a package this machine does not mirror; the
        // malloc interposer alone gives the allocation counts these benchmarks report.
        .package(url: "https://github.com/ordo-one/benchmark.git", exact: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .target(
            name: "BenchmarkWorld",
            dependencies: [.product(name: "Geofence", package: "checkin")],
            path: "Sources/BenchmarkWorld"
        ),
        .executableTarget(
            name: "EngineThroughput",
            dependencies: [
                "BenchmarkWorld", .product(name: "Geofence", package: "checkin"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/EngineThroughput",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "PointInPolygon",
            dependencies: [
                "BenchmarkWorld", .product(name: "Geofence", package: "checkin"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/PointInPolygon",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "IndexBuild",
            dependencies: [
                "BenchmarkWorld", .product(name: "Geofence", package: "checkin"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/IndexBuild",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ]
)
