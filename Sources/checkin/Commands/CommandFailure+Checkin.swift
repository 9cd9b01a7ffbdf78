import ArgumentParser
import CommandSupport

extension CommandFailure {
    /// A request a `checkin` command refuses: `message` names the option or argument at fault,
    /// and the failure points to that command's help.
    init(_ message: String, helpOf command: any ParsableCommand.Type) {
        self.init(message, helpOf: command, in: Checkin.self)
    }
}
