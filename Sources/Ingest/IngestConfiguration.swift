import Foundation
import ServiceSupport
import Shared

/// Settings of the HTTP ingest service.
package struct IngestConfiguration: Sendable {
    package var host: String
    package var port: Int
    /// Largest batch accepted in one request; larger batches are refused whole (413).
    package var maximumBatchSize: Int
    /// Largest request body of any route; larger bodies are answered 413.
    package var maximumBodyBytes: Int
    /// What fixes may hold; the clock skew is set by `CHECKIN_MAX_CLOCK_SKEW`, whether unknown
    /// members are skipped by `CHECKIN_FIXES_IGNORE_UNKNOWN_MEMBERS`.
    package var limits: InputLimits
    /// When false, fixes are accepted without an API key (local demos only).
    package var requireAPIKey: Bool
    package var topics: Topics
    /// Which webhook URLs the management API accepts.
    package var webhookURLPolicy: WebhookURLPolicy
    /// How long an endpoint's previous secret keeps signing after a rotation.
    package var secretRotationWindow: Duration
    /// Failed authentications a client may make per minute before it is answered 429; 0: no limit.
    package var authFailuresPerMinute: Int
    /// How long an API key's answer (its project, or that it is no key) is cached.
    package var apiKeyCacheTimeToLive: Duration
    /// How many zones, fences and positions a project may have, and how often it may replace them.
    package var zoneQuota: ZoneQuota
    /// A map tile URL template (`https://tiles.example/{z}/{x}/{y}.png`) the console draws
    /// under the zones; nil: no tiles, nothing fetched beyond this service.
    package var consoleTiles: String?
    /// The key of the operator routes (`/v1/projects`); nil: those routes answer 404.
    package var operatorKey: String?
    /// How often the keys used since are written as used (their `lastUsedAt`).
    package var keyUsageInterval: Duration = .seconds(60)

    package static let defaultAuthFailuresPerMinute = 30

    package init(
        host: String = "127.0.0.1", port: Int = 8080, maximumBatchSize: Int = 1000,
        maximumBodyBytes: Int = InputLimits.maximumRequestBodyBytes, limits: InputLimits = InputLimits(),
        requireAPIKey: Bool = true, topics: Topics = Topics(), webhookURLPolicy: WebhookURLPolicy = .strict,
        secretRotationWindow: Duration = .seconds(86_400), authFailuresPerMinute: Int = defaultAuthFailuresPerMinute,
        apiKeyCacheTimeToLive: Duration = .seconds(30), zoneQuota: ZoneQuota = ZoneQuota(), operatorKey: String? = nil
    ) {
        self.host = host
        self.port = port
        self.maximumBatchSize = maximumBatchSize
        self.maximumBodyBytes = maximumBodyBytes
        self.limits = limits
        self.requireAPIKey = requireAPIKey
        self.topics = topics
        self.webhookURLPolicy = webhookURLPolicy
        self.secretRotationWindow = secretRotationWindow
        self.authFailuresPerMinute = authFailuresPerMinute
        self.apiKeyCacheTimeToLive = apiKeyCacheTimeToLive
        self.zoneQuota = zoneQuota
        self.operatorKey = operatorKey
    }

    package init(environment: EnvironmentReader, topics: Topics) throws {
        self.init(
            host: environment.string("CHECKIN_HTTP_HOST", default: "127.0.0.1"),
            port: try environment.int("CHECKIN_HTTP_PORT", default: 8080, range: 0...65_535),
            maximumBatchSize: try environment.int("CHECKIN_INGEST_MAX_BATCH", default: 1000, range: 1...100_000),
            limits: InputLimits(
                maxClockSkew: try environment.double(
                    InputLimits.maxClockSkewVariable, default: InputLimits.defaultMaxClockSkew,
                    range: InputLimits.maxClockSkewRange),
                ignoresUnknownFixMembers: try environment.bool(InputLimits.ignoreUnknownFixMembersVariable, default: false)),
            requireAPIKey: try environment.bool("CHECKIN_INGEST_REQUIRE_API_KEY", default: true),
            topics: topics, webhookURLPolicy: try WebhookURLPolicy(environment: environment),
            secretRotationWindow: try environment.secretRotationWindow(),
            authFailuresPerMinute: try environment.int(
                "CHECKIN_AUTH_FAILURES_PER_MINUTE", default: Self.defaultAuthFailuresPerMinute, range: 0...1_000_000),
            zoneQuota: try ZoneQuota(environment: environment))
        let tiles = environment.string("CHECKIN_CONSOLE_TILES", default: "")
        if !tiles.isEmpty {
            guard let url = URL(string: tiles.replacingOccurrences(of: "{", with: "").replacingOccurrences(of: "}", with: "")),
                url.scheme == "https" || url.scheme == "http", url.host != nil,
                ["{z}", "{x}", "{y}"].allSatisfy(tiles.contains)
            else {
                throw ConfigurationError(
                    variable: "CHECKIN_CONSOLE_TILES", value: tiles, expected: "an http(s) URL template with {z}, {x} and {y}")
            }
            consoleTiles = tiles
        }
        let operatorKey = environment.string("CHECKIN_OPERATOR_KEY", default: "")
        if !operatorKey.isEmpty {
            // Guessable operator keys would hand out every project.
            guard operatorKey.count >= 32, !operatorKey.contains(where: \.isWhitespace) else {
                throw ConfigurationError(
                    variable: "CHECKIN_OPERATOR_KEY", value: "(hidden)", expected: "at least 32 characters without spaces")
            }
            self.operatorKey = operatorKey
        }
    }
}

extension ZoneQuota {
    /// `CHECKIN_PROJECT_MAX_ZONES`, `CHECKIN_PROJECT_MAX_FENCES`, `CHECKIN_PROJECT_MAX_POSITIONS`
    /// and `CHECKIN_ZONES_MIN_REPLACE_INTERVAL` (seconds).
    package init(environment: EnvironmentReader) throws {
        self.init(
            maximumZones: try environment.int("CHECKIN_PROJECT_MAX_ZONES", default: Self.defaultMaximumZones, range: 1...Int.max),
            maximumFences: try environment.int(
                "CHECKIN_PROJECT_MAX_FENCES", default: Self.defaultMaximumFences, range: 1...Int.max),
            maximumPositions: try environment.int(
                "CHECKIN_PROJECT_MAX_POSITIONS", default: Self.defaultMaximumPositions, range: 1...Int.max),
            minimumReplaceInterval: try environment.duration(
                "CHECKIN_ZONES_MIN_REPLACE_INTERVAL", default: Self.defaultMinimumReplaceInterval))
    }
}
