// swift-tools-version: 6.2
import PackageDescription

/// The check-in pipeline: one executable (`checkin`) over a few modules, each with one job; beside
/// it the load generator and the benchmarks (`checkin-bench`), which no deployment ships.
///
/// Shared       domain model and wire formats (fixes, events, zones documents, webhook signatures)
/// Geofence     the pure evaluation engine: geometry, spatial index, check-in/check-out rules
/// Crdkafka     the librdkafka C headers, nothing else
/// Kafka        a Kafka client over librdkafka with no domain knowledge
/// Persistence  Postgres: migrations and the stores the services share
/// BatchProcessing  how a consumer's batch succeeds or sets aside exactly the records that cannot
/// ServiceSupport  what every service needs to be operated: configuration, metrics, health endpoints
/// Ingest, Evaluator, Notifier  the three services
/// CommandSupport  what both executables' commands share: process settings, a command's failure, the database
/// checkin      the executable: the services, and the commands that run and manage them
/// CheckinBench  `checkin-bench`: the load generator and the evaluator and notifier benchmarks
/// KafkaTesting  helpers the Kafka client's tests and the integration tests share (Tests/)
let package = Package(
    name: "checkin",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "checkin", targets: ["checkin"]),
        /// The load generator and the benchmarks, out of the production binary.
        .executable(name: "checkin-bench", targets: ["CheckinBench"]),
        /// For the separate `Benchmarks/` package, which measures the engine alone.
        .library(name: "Geofence", targets: ["Geofence"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/x-sheep/swift-property-based.git", from: "2.0.1"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift.git", from: "0.2.0"),
    ],
    targets: [
        .target(
            name: "Shared",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto")
            ]
        ),
        .target(
            name: "Geofence",
            dependencies: ["Shared"]
        ),
        .systemLibrary(
            name: "Crdkafka",
            pkgConfig: "rdkafka"
        ),
        .target(
            name: "Kafka",
            dependencies: [
                "Crdkafka",
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .target(
            name: "Persistence",
            dependencies: [
                "Shared",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "_ConnectionPoolModule", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        /// How a consumer's batch succeeds or sets aside exactly the records that cannot:
        /// transient failures retried, poison records isolated and dead-lettered.
        .target(
            name: "BatchProcessing",
            dependencies: [
                "Kafka", "Persistence", "ServiceSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .target(
            name: "ServiceSupport",
            dependencies: [
                "Shared",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        /// Records the commit a build is made from, for `checkin --version`: in the executable
        /// alone, so that a new commit compiles that leaf again and nothing below it.
        .plugin(name: "BuildCommitPlugin", capability: .buildTool()),
        .target(
            name: "Ingest",
            dependencies: [
                "Shared", "Geofence", "Kafka", "Persistence", "ServiceSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            /// The API's contract, served by the service itself: compiled into the binary, so it
            /// needs no file beside it. (openapi.yaml and schemas/ at the top are links to these.)
            resources: [
                .embedInCode("Contract/openapi.yaml"),
                .embedInCode("Contract/schemas/fix.schema.json"),
                .embedInCode("Contract/schemas/event.schema.json"),
            ]
        ),
        .target(
            name: "Evaluator",
            dependencies: [
                "Shared", "Geofence", "Kafka", "Persistence", "ServiceSupport", "BatchProcessing",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Metrics", package: "swift-metrics"),
            ]
        ),
        .target(
            name: "Notifier",
            dependencies: [
                "Shared", "Kafka", "Persistence", "ServiceSupport", "BatchProcessing",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        /// What the commands of both executables stand on: the settings a process reads from its
        /// environment, a command's failure as one line and a pointer to its help, the database.
        .target(
            name: "CommandSupport",
            dependencies: [
                "Kafka", "Persistence", "ServiceSupport", "Shared",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "checkin",
            dependencies: [
                "Shared", "Geofence", "Kafka", "Persistence", "ServiceSupport", "Ingest", "Evaluator", "Notifier", "BatchProcessing",
                "CommandSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            plugins: ["BuildCommitPlugin"]
        ),
        /// `checkin-bench`: the load generator (`load`) and the benchmarks of the evaluator and the
        /// notifier. Its evaluator benchmark runs the `checkin` built beside it.
        .executableTarget(
            name: "CheckinBench",
            dependencies: [
                "Shared", "Geofence", "Kafka", "Persistence", "ServiceSupport", "Notifier", "BatchProcessing", "CommandSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        /// Helpers for tests of Kafka clients (mock cluster or real broker); no product ships it.
        .target(
            name: "KafkaTesting",
            dependencies: [
                "Kafka",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Tests/KafkaTesting"
        ),
        .testTarget(
            name: "SharedTests",
            dependencies: ["Shared"]
        ),
        .testTarget(
            name: "ServiceSupportTests",
            dependencies: ["ServiceSupport", "Shared"]
        ),
        .testTarget(
            name: "GeofenceTests",
            dependencies: [
                "Geofence", "Shared",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]
        ),
        /// Persistence without a database: the migrations' compatibility check.
        .testTarget(
            name: "PersistenceTests",
            dependencies: ["Persistence", "ServiceSupport", .product(name: "_ConnectionPoolModule", package: "postgres-nio")]
        ),
        .testTarget(
            name: "NotifierTests",
            dependencies: ["Notifier", "Persistence"]
        ),
        .testTarget(
            name: "IngestTests",
            dependencies: ["Ingest", "Shared"]
        ),
        .testTarget(
            name: "EvaluatorTests",
            dependencies: ["Evaluator", "Kafka", "Persistence"]
        ),
        .testTarget(
            name: "BatchProcessingTests",
            dependencies: ["BatchProcessing", "Kafka"]
        ),
        .testTarget(
            name: "KafkaTests",
            dependencies: ["Kafka", "KafkaTesting"]
        ),
        .testTarget(
            name: "IntegrationTests",
            dependencies: [
                "Shared", "Kafka", "KafkaTesting", "Persistence", "ServiceSupport", "Ingest", "Evaluator", "Notifier", "Geofence",
                "BatchProcessing",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
