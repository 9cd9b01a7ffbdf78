import Foundation
import ServiceSupport
import Testing

/// The release a build is, said the same everywhere: the version in the code, the changelog's
/// newest release heading and the OpenAPI document; and `checkin --version` names it with the commit.
@Suite struct ReleaseTests {
    @Test func theVersionIsTheSameInTheCodeTheChangelogAndTheAPIDocument() throws {
        #expect(Release.version.wholeMatch(of: /[0-9]+\.[0-9]+\.[0-9]+/) != nil, "\(Release.version)")
        let root = PrivatePostgres.repositoryRoot
        let changelog = try String(contentsOf: root.appendingPathComponent("CHANGELOG.md"), encoding: .utf8)
        // Changes not released yet gather under "## Unreleased", above the newest release.
        let newest = changelog.split(separator: "\n").first { $0.hasPrefix("## ") && $0 != "## Unreleased" }
        #expect(newest?.hasPrefix("## \(Release.version) ") == true, "\(newest ?? "no release heading")")
        let document = try String(contentsOf: root.appendingPathComponent("openapi.yaml"), encoding: .utf8)
        #expect(document.contains("\n  version: \"\(Release.version)\"\n"), "openapi.yaml's info.version is not \(Release.version)")
    }

    @Test func versionPrintsTheVersionAndTheCommit() async throws {
        let outcome = try await CommandOutcome.run(["--version"])
        #expect(outcome.exitCode == 0)
        let printed = outcome.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(printed.hasPrefix(Release.version + " "), "\(printed)")
        #expect(printed.wholeMatch(of: /[0-9]+\.[0-9]+\.[0-9]+ \(commit ([0-9a-f]{12}(-modified)?|unknown)\)/) != nil, "\(printed)")
    }
}
