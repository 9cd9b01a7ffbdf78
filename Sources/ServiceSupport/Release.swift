/// Which release a binary is: its semantic version, kept here and in CHANGELOG.md, and
/// tagged `vMAJOR.MINOR.PATCH` in git when released. The HTTP API, the webhooks' payloads and
/// the migrations follow the compatibility policy of `docs/releases.md`: within a major
/// version they only grow. (The commit a build was made from is the executable's to say:
/// `checkin --version`.)
package enum Release {
    package static let version = "0.9.0"
    /// What webhook requests say they come from.
    package static var webhookUserAgent: String { "checkin-webhooks/\(version)" }
}
