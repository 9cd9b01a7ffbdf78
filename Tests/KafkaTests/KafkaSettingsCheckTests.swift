import Foundation
import Testing

@testable import Kafka

/// The librdkafka properties a deployment sets are checked before any client starts: each
/// problem names its property, all problems at once, and the producers' guarantees stay on.
@Suite struct KafkaSettingsCheckTests {
    /// Paths under /certs count as readable files; nothing else does.
    static func readable(_ path: String) -> Bool { path.hasPrefix("/certs/") }

    func problems(_ properties: [String: String]) -> [String] {
        KafkaSettingsCheck.problems(in: properties, isReadableFile: Self.readable).map(\.property)
    }

    @Test func plaintextWithoutSettingsPasses() {
        #expect(problems([:]).isEmpty)
        #expect(problems(["linger.ms": "20", "acks": "all", "enable.idempotence": "true"]).isEmpty)
    }

    @Test func theProducersGuaranteesCannotBeTurnedOff() {
        #expect(problems(["acks": "1"]) == ["acks"])
        #expect(problems(["request.required.acks": "0"]) == ["request.required.acks"])
        #expect(problems(["enable.idempotence": "false"]) == ["enable.idempotence"])
        #expect(problems(["acks": "-1"]).isEmpty)
    }

    @Test func tlsNeedsReadableFilesAndACertificateWithItsKey() {
        #expect(problems(["security.protocol": "ssl", "ssl.ca.location": "/certs/ca.pem"]).isEmpty)
        #expect(problems(["security.protocol": "ssl", "ssl.ca.location": "probe"]).isEmpty)
        #expect(problems(["security.protocol": "SSL", "ssl.ca.location": "/missing/ca.pem"]) == ["ssl.ca.location"])
        #expect(
            problems(["security.protocol": "ssl", "ssl.certificate.location": "/certs/client.pem"]) == ["ssl.key.location"])
        #expect(problems(["security.protocol": "ssl", "ssl.key.location": "/certs/client.key"]) == ["ssl.certificate.location"])
        #expect(
            problems([
                "security.protocol": "ssl", "ssl.certificate.location": "/certs/client.pem", "ssl.key.location": "/certs/client.key",
            ]).isEmpty)
    }

    @Test func settingsOfAProtocolNotInUseAreNamed() {
        #expect(problems(["ssl.ca.location": "/certs/ca.pem"]) == ["ssl.ca.location"])
        #expect(problems(["security.protocol": "ssl", "sasl.username": "u"]) == ["sasl.username"])
        #expect(problems(["security.protocol": "tls"]) == ["security.protocol"])
    }

    @Test func scramNeedsItsMechanismAndCredentials() {
        #expect(problems(["security.protocol": "sasl_ssl"]) == ["sasl.mechanism"])
        #expect(problems(["security.protocol": "sasl_ssl", "sasl.mechanism": "GSSAPI"]) == ["sasl.mechanism"])
        #expect(
            problems(["security.protocol": "sasl_ssl", "sasl.mechanism": "SCRAM-SHA-512"]) == ["sasl.username", "sasl.password"])
        #expect(
            problems([
                "security.protocol": "sasl_ssl", "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "checkin",
                "sasl.password": "secret",
            ]).isEmpty)
    }

    @Test func oauthBearerNeedsAnIdentityProvider() {
        #expect(problems(["security.protocol": "sasl_ssl", "sasl.mechanism": "OAUTHBEARER"]) == ["sasl.oauthbearer.method"])
        #expect(
            problems(["security.protocol": "sasl_ssl", "sasl.mechanism": "OAUTHBEARER", "sasl.oauthbearer.method": "oidc"])
                == ["sasl.oauthbearer.client.id", "sasl.oauthbearer.client.secret", "sasl.oauthbearer.token.endpoint.url"])
        // Taken by this build of librdkafka too (it is built with OIDC support).
        #expect(
            problems([
                "security.protocol": "sasl_ssl", "sasl.mechanism": "OAUTHBEARER", "sasl.oauthbearer.method": "oidc",
                "sasl.oauthbearer.client.id": "checkin", "sasl.oauthbearer.client.secret": "secret",
                "sasl.oauthbearer.token.endpoint.url": "https://login.example.com/oauth2/token",
            ]).isEmpty)
    }

    @Test func whatLibrdkafkaRefusesIsNamed() {
        #expect(problems(["no.such.property": "1"]) == ["no.such.property"])
        #expect(problems(["linger.ms": "soon"]) == ["linger.ms"])
    }

    /// Every example of docs/kafka.md passes the check (its files taken as present).
    @Test func theDocumentedExamplesPass() throws {
        let page = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appending(path: "docs/kafka.md")
        let examples = try KafkaDocumentExamples(markdown: String(contentsOf: page, encoding: .utf8)).examples
        #expect(examples.count >= 5)
        for (title, properties) in examples {
            #expect(!properties.isEmpty, "\(title)")
            let found = KafkaSettingsCheck.problems(in: properties, isReadableFile: { _ in true })
            #expect(found.isEmpty, "\(title): \(found)")
        }
    }
}

/// The `CHECKIN_KAFKA_PROPERTY_*` lines of each fenced example of a page, by the heading above it.
struct KafkaDocumentExamples {
    var examples: [(title: String, properties: [String: String])] = []

    init(markdown: String) {
        var title = ""
        var inBlock = false
        var current: [String: String] = [:]
        for line in markdown.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("```") {
                if inBlock, !current.isEmpty { examples.append((title, current)) }
                inBlock.toggle()
                current = [:]
            } else if !inBlock, line.hasPrefix("#") {
                title = line.trimmingCharacters(in: CharacterSet(charactersIn: "# "))
            } else if inBlock, line.hasPrefix("CHECKIN_KAFKA_PROPERTY_"), let equals = line.firstIndex(of: "=") {
                let name = line[line.index(line.startIndex, offsetBy: "CHECKIN_KAFKA_PROPERTY_".count)..<equals]
                current[name.replacingOccurrences(of: "_", with: ".")] = String(line[line.index(after: equals)...])
            }
        }
    }
}
