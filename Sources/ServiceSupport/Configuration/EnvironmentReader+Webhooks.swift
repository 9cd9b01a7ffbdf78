import Shared

extension WebhookURLPolicy {
    /// `CHECKIN_WEBHOOK_ALLOW_PRIVATE` and `CHECKIN_WEBHOOK_ALLOW_HTTP`, both false unless set
    /// (`checkin dev` and `checkin demo` set them when they are unset).
    package init(environment: EnvironmentReader) throws {
        self.init(
            allowPrivateAddresses: try environment.bool(Self.allowPrivateVariable, default: false),
            allowHTTP: try environment.bool(Self.allowHTTPVariable, default: false))
    }
}

extension EnvironmentReader {
    /// `CHECKIN_SECRET_KEY`, or nil when it is unset; a value that is not the base64 of
    /// 32 bytes stops the process with a message naming the variable.
    package func secretEncryptionKey() throws -> SecretEncryptionKey? {
        guard let text = optionalString(SecretEncryptionKey.variable) else { return nil }
        do {
            return try SecretEncryptionKey(base64: text)
        } catch {
            throw ConfigurationError(
                variable: SecretEncryptionKey.variable, value: "(\(text.count) characters, not shown)",
                expected: "the base64 of 32 random bytes (openssl rand -base64 32)")
        }
    }

    /// How long the previous secret keeps signing after a rotation:
    /// `CHECKIN_WEBHOOK_SECRET_ROTATION_WINDOW` seconds, 24 h unless set.
    package func secretRotationWindow() throws -> Duration {
        try duration("CHECKIN_WEBHOOK_SECRET_ROTATION_WINDOW", default: .seconds(86_400))
    }

    /// `checkin dev` and `checkin demo` run against receivers on this machine: they allow
    /// private addresses and plain http unless the variables say otherwise.
    package mutating func defaultToLocalWebhooks() {
        for name in [WebhookURLPolicy.allowPrivateVariable, WebhookURLPolicy.allowHTTPVariable] where optionalString(name) == nil {
            values[name] = "true"
        }
    }
}
