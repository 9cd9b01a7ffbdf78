import Foundation

/// One librdkafka property a deployment set (or left out) that no client could work with.
package struct KafkaSettingProblem: Error, Sendable, Equatable, CustomStringConvertible {
    /// The librdkafka property at fault, e.g. `sasl.username`.
    package var property: String
    package var problem: String

    package init(property: String, problem: String) {
        self.property = property
        self.problem = problem
    }

    package var description: String { "\(property): \(problem)" }
}

/// Checks the librdkafka properties a deployment gives every client before any starts, so that
/// a cluster behind TLS or SASL that cannot be reached as configured is refused at once, naming
/// the property, rather than failing later as a connection that never succeeds. It also keeps
/// the producers' guarantees (`acks=all`, idempotence) from being configured away.
package enum KafkaSettingsCheck {
    /// The security protocols librdkafka speaks.
    static let protocols: Set<String> = ["plaintext", "ssl", "sasl_plaintext", "sasl_ssl"]
    /// The SASL mechanisms this build supports (GSSAPI is not built in).
    static let mechanisms: Set<String> = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"]
    /// Properties naming a file the client reads when it connects.
    static let fileProperties = [
        "ssl.ca.location", "ssl.certificate.location", "ssl.key.location", "ssl.crl.location", "ssl.keystore.location",
    ]

    /// Every problem of `properties` at once; empty when a client can be configured with them.
    /// - Parameter isReadableFile: whether a path names a file this process can read.
    package static func problems(
        in properties: [String: String],
        isReadableFile: (String) -> Bool = { FileManager.default.isReadableFile(atPath: $0) }
    ) -> [KafkaSettingProblem] {
        var problems = producerGuarantees(properties)
        let securityProtocol = properties["security.protocol"]?.lowercased() ?? "plaintext"
        guard protocols.contains(securityProtocol) else {
            return problems + [
                KafkaSettingProblem(
                    property: "security.protocol",
                    problem: "must be one of plaintext, ssl, sasl_plaintext, sasl_ssl, not \"\(properties["security.protocol"]!)\"")
            ]
        }
        let usesTLS = securityProtocol.hasSuffix("ssl")
        let usesSASL = securityProtocol.hasPrefix("sasl")
        for name in properties.keys.sorted() {
            if name.hasPrefix("ssl.") && !usesTLS {
                problems.append(
                    KafkaSettingProblem(
                        property: name,
                        problem: "is a TLS setting, but security.protocol is \(securityProtocol): set it to ssl or sasl_ssl"))
            }
            if name.hasPrefix("sasl.") && !usesSASL {
                problems.append(
                    KafkaSettingProblem(
                        property: name,
                        problem: "is a SASL setting, but security.protocol is \(securityProtocol): set it to sasl_ssl"))
            }
        }
        if usesTLS { problems += tlsProblems(properties, isReadableFile: isReadableFile) }
        if usesSASL { problems += saslProblems(properties) }
        problems += librdkafkaRefusals(properties)
        return problems
    }

    /// The producers acknowledge nothing before every in-sync replica has it, and never write
    /// a record twice when they retry: a deployment may not turn either off.
    static func producerGuarantees(_ properties: [String: String]) -> [KafkaSettingProblem] {
        var problems: [KafkaSettingProblem] = []
        for name in ["acks", "request.required.acks"] {
            if let value = properties[name], !["all", "-1"].contains(value.lowercased()) {
                problems.append(
                    KafkaSettingProblem(
                        property: name,
                        problem: "must be all (or left out): a fix is acknowledged only once every in-sync replica has it"))
            }
        }
        if let value = properties["enable.idempotence"], value.lowercased() != "true" {
            problems.append(
                KafkaSettingProblem(
                    property: "enable.idempotence",
                    problem: "must be true (or left out): a retried send must not write a record twice or out of order"))
        }
        return problems
    }

    static func tlsProblems(_ properties: [String: String], isReadableFile: (String) -> Bool) -> [KafkaSettingProblem] {
        var problems: [KafkaSettingProblem] = []
        for name in fileProperties {
            // `probe`: librdkafka looks for the system's CA bundle itself.
            guard let path = properties[name], !(name == "ssl.ca.location" && path == "probe") else { continue }
            if !isReadableFile(path) {
                problems.append(KafkaSettingProblem(property: name, problem: "\(path) is not a file this process can read"))
            }
        }
        let certificate = properties["ssl.certificate.location"] ?? properties["ssl.certificate.pem"]
        let key = properties["ssl.key.location"] ?? properties["ssl.key.pem"]
        if certificate != nil && key == nil {
            problems.append(
                KafkaSettingProblem(
                    property: "ssl.key.location", problem: "is required with a client certificate (the certificate's private key)"))
        }
        if key != nil && certificate == nil {
            problems.append(
                KafkaSettingProblem(
                    property: "ssl.certificate.location", problem: "is required with a private key (the client certificate)"))
        }
        return problems
    }

    static func saslProblems(_ properties: [String: String]) -> [KafkaSettingProblem] {
        guard let mechanism = (properties["sasl.mechanism"] ?? properties["sasl.mechanisms"])?.uppercased() else {
            return [
                KafkaSettingProblem(
                    property: "sasl.mechanism", problem: "is required with SASL: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER")
            ]
        }
        guard mechanisms.contains(mechanism) else {
            return [
                KafkaSettingProblem(
                    property: "sasl.mechanism",
                    problem: "must be PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER, not \"\(mechanism)\"")
            ]
        }
        var required: [String]
        switch mechanism {
        case "OAUTHBEARER":
            guard properties["sasl.oauthbearer.method"]?.lowercased() == "oidc" else {
                // librdkafka's other OAUTHBEARER tokens are unsigned ones meant for tests.
                return [
                    KafkaSettingProblem(
                        property: "sasl.oauthbearer.method",
                        problem: "must be oidc with OAUTHBEARER: tokens come from the identity provider's token endpoint")
                ]
            }
            required = ["sasl.oauthbearer.client.id", "sasl.oauthbearer.client.secret", "sasl.oauthbearer.token.endpoint.url"]
        default:
            required = ["sasl.username", "sasl.password"]
        }
        return required.filter { (properties[$0] ?? "").isEmpty }.map {
            KafkaSettingProblem(property: $0, problem: "is required with SASL \(mechanism)")
        }
    }

    /// The names and values librdkafka itself refuses (unknown properties, malformed values,
    /// features this build lacks), found by configuring a client without starting one.
    static func librdkafkaRefusals(_ properties: [String: String]) -> [KafkaSettingProblem] {
        RDKafkaConfiguration.refusals(properties).map { KafkaSettingProblem(property: $0.property, problem: $0.reason) }
    }
}
