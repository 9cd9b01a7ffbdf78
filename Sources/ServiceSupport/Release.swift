/// Which release a binary is: its semantic version (kept here and in CHANGELOG.md, tagged
/// `vMAJOR.MINOR.PATCH` in git when released) and the commit it was built from. The HTTP
/// API, the webhooks' payloads and the migrations follow the compatibility policy of
/// `docs/releases.md`: within a major version they only grow.
public enum Release {
    public static let version = "0.9.0"
    /// The commit the build was made from (`-modified` when the tree had uncommitted changes).
    public static var commit: String { buildCommit }
    /// `0.9.0 (commit 1a2b3c4d5e6f)`, as `--version` prints it.
    public static var description: String { "\(version) (commit \(commit))" }
    /// What webhook requests say they come from.
    public static var webhookUserAgent: String { "checkin-webhooks/\(version)" }
}
