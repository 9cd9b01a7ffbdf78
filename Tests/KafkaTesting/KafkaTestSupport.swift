import Foundation
import Kafka
import Logging

/// What every test of Kafka clients needs, against the in-process mock cluster or
/// the real broker alike: quiet logging, unique names, groups that form in seconds,
/// and waiting with a deadline.
package enum KafkaTestSupport {
    /// Errors only, unless `KAFKA_TEST_LOG` names a level.
    package static var logger: Logger {
        var logger = Logger(label: "kafka-tests")
        logger.logLevel = ProcessInfo.processInfo.environment["KAFKA_TEST_LOG"].flatMap(Logger.Level.init(rawValue:)) ?? .error
        return logger
    }

    /// Unique per test, so tests can share one cluster and run in parallel.
    package static func uniqueName(_ prefix: String) -> String {
        "\(prefix)-\(UUID().uuidString.prefix(8).lowercased())"
    }

    /// Short group timeouts: the mock cluster and Tansu form groups in seconds only with them.
    package static func consumerConfiguration(
        bootstrapServers: String, groupId: String, topics: [String]
    ) -> KafkaConsumerConfiguration {
        KafkaConsumerConfiguration(
            bootstrapServers: bootstrapServers, groupId: groupId, clientId: groupId, topics: topics,
            sessionTimeout: .seconds(6), heartbeatInterval: .seconds(1), maxPollInterval: .seconds(10))
    }

    /// Polls `condition` until it holds; throws naming `what` after `timeout`. Returns the time it took.
    @discardableResult
    package static func waitUntil(
        _ what: String, within timeout: Duration = .seconds(30), _ condition: () -> Bool
    ) async throws -> Duration {
        let started = ContinuousClock.now
        while !condition() {
            guard ContinuousClock.now - started < timeout else { throw TestTimeout(description: "\(what): not within \(timeout)") }
            try await Task.sleep(for: .milliseconds(20))
        }
        return ContinuousClock.now - started
    }
}

/// A wait that ran out: tells a timeout from a hang, and what was awaited.
package struct TestTimeout: Error, CustomStringConvertible {
    package var description: String
}
