import Foundation
import PackagePlugin

/// Writes the commit the build is made from into `BuildCommit.swift`, so that a binary
/// says which build it is (`checkin --version`). Run before every build; the file is
/// rewritten only when the commit changed, so an unchanged tree compiles nothing again.
/// Outside a git checkout (a source archive) the commit is "unknown".
@main
struct BuildCommitPlugin: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let output = context.pluginWorkDirectoryURL.appending(path: "BuildCommit.swift")
        let script = """
            commit=$(git -C "$1" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
            if [ "$commit" != unknown ] && [ -n "$(git -C "$1" status --porcelain --untracked-files=no 2>/dev/null | head -n1)" ]; then
                commit="$commit-modified"
            fi
            text="/// The commit this build was made from (written by the build).
            let buildCommit = \\"$commit\\""
            if [ ! -f "$2" ] || [ "$(cat "$2")" != "$text" ]; then printf '%s\\n' "$text" > "$2"; fi
            """
        return [
            .prebuildCommand(
                displayName: "Recording the build's commit",
                executable: URL(fileURLWithPath: "/bin/sh"),
                arguments: ["-c", script, "build-commit", context.package.directoryURL.path, output.path],
                outputFilesDirectory: context.pluginWorkDirectoryURL)
        ]
    }
}
