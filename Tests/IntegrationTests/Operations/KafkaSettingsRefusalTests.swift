import Foundation
import Testing

/// Kafka settings no client could work with stop every command at once, naming each variable
/// at fault, before anything connects.
@Suite struct KafkaSettingsRefusalTests {
    @Test func missingSASLCredentialsAreNamed() async throws {
        let started = ContinuousClock.now
        let outcome = try await CommandOutcome.run(
            ["projects", "list"],
            environment: [
                "CHECKIN_KAFKA_PROPERTY_security_protocol": "sasl_ssl",
                "CHECKIN_KAFKA_PROPERTY_sasl_mechanism": "SCRAM-SHA-512",
                "CHECKIN_KAFKA_PROPERTY_ssl_ca_location": "/nonexistent/ca.pem",
            ])
        #expect(outcome.exitCode != 0)
        #expect(ContinuousClock.now - started < .seconds(5))
        for variable in [
            "CHECKIN_KAFKA_PROPERTY_sasl_username", "CHECKIN_KAFKA_PROPERTY_sasl_password",
            "CHECKIN_KAFKA_PROPERTY_ssl_ca_location",
        ] {
            #expect(outcome.standardError.contains(variable), "\(outcome.standardError)")
        }
    }

    @Test(arguments: [
        ["CHECKIN_KAFKA_PROPERTY_acks": "1"], ["CHECKIN_KAFKA_PROPERTY_enable_idempotence": "false"],
    ])
    func theProducersGuaranteesCannotBeConfiguredAway(_ environment: [String: String]) async throws {
        let outcome = try await CommandOutcome.run(["dev"], environment: environment.merging(["CHECKIN_HTTP_PORT": "0"]) { a, _ in a })
        #expect(outcome.exitCode != 0)
        #expect(outcome.standardError.contains(environment.keys.first!), "\(outcome.standardError)")
    }

    @Test func moreInSyncReplicasThanReplicasIsRefused() async throws {
        let outcome = try await CommandOutcome.run(
            ["projects", "list"],
            environment: ["CHECKIN_KAFKA_REPLICATION_FACTOR": "2", "CHECKIN_KAFKA_MIN_INSYNC_REPLICAS": "3"])
        #expect(outcome.exitCode != 0)
        #expect(outcome.standardError.contains("CHECKIN_KAFKA_MIN_INSYNC_REPLICAS"), "\(outcome.standardError)")
    }
}
