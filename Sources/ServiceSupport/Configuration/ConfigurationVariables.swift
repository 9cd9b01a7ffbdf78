import Foundation

/// Every environment variable the program reads, in one place: docs/configuration.md lists
/// exactly these (a test compares the two, and both with the names the sources read), and a
/// `CHECKIN_*` variable that is none of them is named in a warning at start, as a misspelt
/// setting would otherwise be ignored in silence.
package enum ConfigurationVariables {
    /// The settings of the program.
    package static let settings: Set<String> = [
        "CHECKIN_API_KEY", "CHECKIN_API_KEY_FILE", "CHECKIN_API_URL", "CHECKIN_AUTH_FAILURES_PER_MINUTE",
        "CHECKIN_BEACON_EXIT_AFTER", "CHECKIN_CONSOLE_TILES",
        "CHECKIN_CONSUMER_BUFFER_BYTES", "CHECKIN_DATABASE_IDLE_IN_TRANSACTION_TIMEOUT",
        "CHECKIN_DATABASE_POOL_SIZE", "CHECKIN_DATABASE_URL", "CHECKIN_DECISION_RETENTION",
        "CHECKIN_DELIVERY_RETENTION", "CHECKIN_DEVICE_STATE_RETENTION", "CHECKIN_EVALUATOR_BATCH",
        "CHECKIN_EVALUATOR_BATCH_TIMEOUT", "CHECKIN_EVALUATOR_DECISIONS", "CHECKIN_EVALUATOR_GROUP",
        "CHECKIN_EVALUATOR_LEAVE_GROUP_AFTER", "CHECKIN_EVENT_LOG_RETENTION", "CHECKIN_EXIT_BUFFER",
        "CHECKIN_FIXES_IGNORE_UNKNOWN_MEMBERS",
        "CHECKIN_HTTP_HOST", "CHECKIN_HTTP_PORT", "CHECKIN_INGEST_LINGER_MS", "CHECKIN_INGEST_MAX_BATCH",
        "CHECKIN_INGEST_REQUIRE_API_KEY", "CHECKIN_KAFKA_BROKERS", "CHECKIN_KAFKA_COMMIT_INTERVAL_MS",
        "CHECKIN_KAFKA_CREATE_TOPICS", "CHECKIN_KAFKA_HEARTBEAT_INTERVAL_MS", "CHECKIN_KAFKA_MAX_POLL_INTERVAL_MS",
        "CHECKIN_KAFKA_MIN_INSYNC_REPLICAS", "CHECKIN_KAFKA_PARTITIONS", "CHECKIN_KAFKA_REBALANCE_LIMIT",
        "CHECKIN_KAFKA_REPLICATION_FACTOR", "CHECKIN_KAFKA_SESSION_TIMEOUT_MS", "CHECKIN_LOG_FORMAT",
        "CHECKIN_LOG_LEVEL", "CHECKIN_MAX_ACCURACY", "CHECKIN_MAX_CLOCK_SKEW", "CHECKIN_MAX_CROSSING_GAP",
        "CHECKIN_MAX_PRODUCER_SKEW", "CHECKIN_NOTIFIER_GROUP", "CHECKIN_OPERATOR_KEY", "CHECKIN_PROJECT_MAX_FENCES",
        "CHECKIN_PROJECT_MAX_POSITIONS", "CHECKIN_PROJECT_MAX_ZONES", "CHECKIN_RESTART_TOLERANCE",
        "CHECKIN_SECRET_KEY", "CHECKIN_SHUTDOWN_GRACE", "CHECKIN_STALE_AFTER", "CHECKIN_STALE_SWEEP_INTERVAL",
        "CHECKIN_STATUS_READY_URLS",
        "CHECKIN_TOPIC_CHECKINS", "CHECKIN_TOPIC_CHECKOUTS", "CHECKIN_TOPIC_EVENTS_DLQ", "CHECKIN_TOPIC_FIXES",
        "CHECKIN_TOPIC_FIXES_DLQ", "CHECKIN_WEBHOOK_ALLOW_HTTP", "CHECKIN_WEBHOOK_ALLOW_PRIVATE",
        "CHECKIN_WEBHOOK_CLAIM_WHEN_QUEUED", "CHECKIN_WEBHOOK_CONCURRENCY", "CHECKIN_WEBHOOK_ENDPOINT_CONCURRENCY",
        "CHECKIN_WEBHOOK_GAP_HOLD", "CHECKIN_WEBHOOK_LEASE", "CHECKIN_WEBHOOK_MAX_ATTEMPTS",
        "CHECKIN_WEBHOOK_MAX_RETRY_DELAY", "CHECKIN_WEBHOOK_RETRY_DELAY", "CHECKIN_WEBHOOK_SECRET_ROTATION_WINDOW",
        "CHECKIN_WEBHOOK_TIMEOUT", "CHECKIN_ZONES_MIN_REPLACE_INTERVAL", "CHECKIN_ZONE_LOAD_TIMEOUT",
        "CHECKIN_ZONE_REFRESH_INTERVAL",
    ]

    /// Names that stand for a family of settings: `CHECKIN_KAFKA_PROPERTY_<librdkafka property>`.
    package static let prefixes = ["CHECKIN_KAFKA_PROPERTY_"]

    /// Variables of the project's own scripts and tests, which the program does not read but
    /// which are set around it (scripts/with-services.sh, scripts/load.sh, the test harness).
    package static let ofTheProjectsScripts: Set<String> = [
        "CHECKIN_ADMIN_DATABASE_URL", "CHECKIN_API_TEST_EXAMPLES", "CHECKIN_BINARY", "CHECKIN_BROKER_PORT",
        "CHECKIN_BUILD_RDKAFKA", "CHECKIN_CAPACITY_BENCH", "CHECKIN_CAPACITY_BENCH_FSYNC", "CHECKIN_CAPACITY_OUT",
        "CHECKIN_CAPACITY_STEP", "CHECKIN_CAPACITY_STEPS", "CHECKIN_CAPACITY_WORK", "CHECKIN_LOAD_HOOK",
        "CHECKIN_LOAD_BINARY", "CHECKIN_LOAD_FSYNC", "CHECKIN_LOAD_PORT", "CHECKIN_LOAD_SETTLE",
        "CHECKIN_POSTGRES_DIR", "CHECKIN_POSTGRES_EXTRA_OPTIONS", "CHECKIN_POSTGRES_PORT", "CHECKIN_RUN_DIR",
    ]

    /// A `CHECKIN_*` variable of the environment that names no setting, with the setting it
    /// was most likely meant to be.
    package struct Unknown: Sendable, Equatable {
        package var name: String
        package var suggestion: String?

        package init(name: String, suggestion: String?) {
            self.name = name
            self.suggestion = suggestion
        }

        package var warning: String {
            "\(name) is not a setting of checkin and is ignored"
                + (suggestion.map { " (did you mean \($0)?)" } ?? "") + "; see docs/configuration.md"
        }
    }

    /// The variables of `environment` that start with `CHECKIN_` and name nothing the program
    /// or its scripts read, in name order.
    package static func unknown(in environment: [String: String]) -> [Unknown] {
        environment.keys.filter { name in
            name.hasPrefix("CHECKIN_") && !settings.contains(name) && !ofTheProjectsScripts.contains(name)
                && !name.hasPrefix("CHECKIN_TEST_") && !prefixes.contains { name.hasPrefix($0) }
        }
        .sorted()
        .map { Unknown(name: $0, suggestion: nearestSetting(to: $0)) }
    }

    /// The setting within three edits of `name`, if one is nearest.
    static func nearestSetting(to name: String) -> String? {
        let scored = settings.map { ($0, editDistance(Array(name.utf8), Array($0.utf8))) }.filter { $0.1 <= 3 }
        guard let best = scored.min(by: { ($0.1, $0.0) < ($1.1, $1.0) }) else { return nil }
        return best.0
    }

    /// Levenshtein distance: insertions, deletions and substitutions of one byte each.
    static func editDistance(_ a: [UInt8], _ b: [UInt8]) -> Int {
        var previous = Array(0...b.count)
        for (i, x) in a.enumerated() {
            var current = [i + 1] + Array(repeating: 0, count: b.count)
            for (j, y) in b.enumerated() {
                current[j + 1] = min(previous[j + 1] + 1, current[j] + 1, previous[j] + (x == y ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }
}
