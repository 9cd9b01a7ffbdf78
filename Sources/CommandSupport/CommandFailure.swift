import ArgumentParser

/// Why a command did not do what it was asked, printed as `Error: <message>` and, when the
/// command's help says what it expects, a line pointing there. argument-parser prints the
/// whole usage text after a `ValidationError`, which buries a one-line answer ("no project
/// 'x'") under forty lines; it keeps doing so for what it finds itself (an unknown option,
/// a missing argument), where the usage is the answer.
package struct CommandFailure: Error, CustomStringConvertible {
    package var message: String
    /// The command whose `--help` explains what it expects, from its program on:
    /// `checkin deliveries list`.
    package var command: String?

    /// A request the command refuses: `message` names the option or argument at fault.
    /// `program` is the root command of the executable, below which `command` is found.
    package init(_ message: String, helpOf command: any ParsableCommand.Type, in program: any ParsableCommand.Type) {
        self.message = message
        self.command = program.path(to: command).map { "\(program._commandName) \($0)" }
    }

    /// A failure no option fixes (a service that did not answer): the message alone.
    package init(_ message: String) {
        self.message = message
        self.command = nil
    }

    package var description: String {
        guard let command else { return message }
        return "\(message)\nSee '\(command) --help'."
    }
}

extension ParsableCommand {
    /// The names that run `command` below this command ("deliveries list"), found in the
    /// subcommand tree, so that no command has to spell out its own path.
    package static func path(to command: any ParsableCommand.Type) -> String? {
        func names(below parent: any ParsableCommand.Type) -> [String]? {
            for child in parent.configuration.subcommands {
                if ObjectIdentifier(child) == ObjectIdentifier(command) { return [child._commandName] }
                if let rest = names(below: child) { return [child._commandName] + rest }
            }
            return nil
        }
        return names(below: Self.self)?.joined(separator: " ")
    }
}
