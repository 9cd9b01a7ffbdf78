import ArgumentParser
import CommandSupport
import Logging
import Persistence

/// Refuses a project that does not exist, naming it: an empty answer must mean nothing
/// there, and a change must not be made for a misspelt project.
func requireProject(_ project: String, of command: any ParsableCommand.Type, database: Database, logger: Logger) async throws {
    guard try await ProjectStore(database: database, logger: logger).projectExists(project) else {
        throw CommandFailure("--project: no project '\(project)'", helpOf: command)
    }
}
