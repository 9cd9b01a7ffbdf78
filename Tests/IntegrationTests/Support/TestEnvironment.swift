import Foundation
import Testing

/// Where the real broker and Postgres of the integration tests are. They are
/// started by `scripts/with-services.sh` (as `make test` does); a test run
/// without them fails loudly rather than skipping, so a green run always means
/// the tests really ran against both.
enum TestEnvironment {
    static var kafkaBrokers: String {
        required("CHECKIN_KAFKA_BROKERS", placeholder: "127.0.0.1:1")
    }

    static var databaseURL: String {
        required("CHECKIN_DATABASE_URL", placeholder: "postgres://unset@127.0.0.1:1/unset")
    }

    /// A missing variable fails the calling test with the fix in its message;
    /// the placeholder (nothing listens on port 1) makes the rest of that test fail fast.
    private static func required(_ name: String, placeholder: String) -> String {
        guard let value = ProcessInfo.processInfo.environment[name], !value.isEmpty else {
            Issue.record(
                "\(name) is not set: run the integration tests through `make test` or `scripts/with-services.sh swift test`"
            )
            return placeholder
        }
        return value
    }
}
