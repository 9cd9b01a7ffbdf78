import ArgumentParser
import CommandSupport
import Foundation
import Geofence
import Ingest
import Logging
import Persistence
import ServiceSupport
import Shared

/// What `checkin zones` asks of a project's zones and their versions.
protocol ZonesBackend: Sendable {
    /// Replaces the zones with the document of `file`, keeping `message` with the new version;
    /// the answer, and the document's fences.
    func replace(with file: String, expectedVersion: Int64?, message: String?) async throws -> (answer: ZonesReplaced, fences: Int)
    /// What the document of `file` would change, against the version it names.
    func preview(_ file: String, expectedVersion: Int64?) async throws -> (changes: ZonesDryRun, version: Int64)
    func current() async throws -> ZonesDocument
    func versions(before cursor: Int64?, limit: Int) async throws -> PageAnswer<ZonesVersionSummary>
    func document(version: Int64) async throws -> ZonesDocument
    func restore(version: Int64, expectedVersion: Int64?) async throws -> ZonesReplaced
}

func zonesBackend(project: String, of command: any ParsableCommand.Type) throws -> any ZonesBackend {
    try Backend.select(
        project: project, remote: { RemoteZones(api: $0) }, direct: { DirectZones(project: project, command: command) })
}

/// Through the API: the document goes as the file holds it, and the API, whose validator and
/// quota are the deployment's, answers every problem.
struct RemoteZones: ZonesBackend {
    let api: ManagementAPI

    func replace(with file: String, expectedVersion: Int64?, message: String?) async throws -> (answer: ZonesReplaced, fences: Int) {
        let data = try readInputFile(file, naming: file)
        let answer = try await api.replaceZones(data, expectedVersion: expectedVersion, message: message)
        // Accepted, so it reads; only the count of its fences is wanted.
        let document = try? WireJSON.decoder().decode(ZonesDocument.self, from: data)
        return (answer, document?.zones.reduce(0) { $0 + $1.fences.count } ?? 0)
    }

    func preview(_ file: String, expectedVersion: Int64?) async throws -> (changes: ZonesDryRun, version: Int64) {
        try await api.previewZones(try readInputFile(file, naming: file), expectedVersion: expectedVersion)
    }

    func current() async throws -> ZonesDocument { try await api.zones() }

    func versions(before cursor: Int64?, limit: Int) async throws -> PageAnswer<ZonesVersionSummary> {
        try await api.zoneVersions(before: cursor, limit: limit)
    }

    func document(version: Int64) async throws -> ZonesDocument { try await api.zones(version: version) }

    func restore(version: Int64, expectedVersion: Int64?) async throws -> ZonesReplaced {
        try await api.restoreZones(version: version, expectedVersion: expectedVersion)
    }
}

/// On the database: the document is validated here, against the quota of this environment,
/// and an import is not spaced out as the API's are.
struct DirectZones: ZonesBackend {
    let project: String
    let command: any ParsableCommand.Type

    /// The document of `file`, validated, within the project's quota.
    func load(_ file: String) throws -> ZonesDocument {
        let document = try loadZonesDocument(path: file)
        // The operator's import is not spaced out, but the project's quota holds as through the API.
        let excess = try ZoneQuota(environment: EnvironmentReader()).excess(of: document)
        guard excess.isEmpty else {
            throw CommandFailure("\(file): beyond the project's quota: " + excess.joined(separator: "; "), helpOf: command)
        }
        return document
    }

    func replace(with file: String, expectedVersion: Int64?, message: String?) async throws -> (answer: ZonesReplaced, fences: Int) {
        let document = try load(file)
        let (project, command) = (project, command)
        let version = try await withDatabase { database, logger in
            try await requireProject(project, of: command, database: database, logger: logger)
            return try await replaceZones(
                of: project, with: document, expectedVersion: expectedVersion, message: message, database: database, logger: logger)
        }
        return (try Self.replaced(document, version: version), document.zones.reduce(0) { $0 + $1.fences.count })
    }

    func preview(_ file: String, expectedVersion: Int64?) async throws -> (changes: ZonesDryRun, version: Int64) {
        let document = try load(file)
        let (project, command) = (project, command)
        let (changes, version) = try await withDatabase { database, logger in
            try await requireProject(project, of: command, database: database, logger: logger)
            let current = try await ZoneStore(database: database, logger: logger).currentZones(projectId: project)
            if let expectedVersion, expectedVersion != current.version {
                throw versionMismatch(expectedVersion, current: current.version, project: project)
            }
            return (try document.changes(from: current.document), current.version)
        }
        let lint = try FenceLint.check(document)
        return (ZonesDryRun(changes: changes, warnings: lint.warnings, warningCount: lint.total), version)
    }

    func current() async throws -> ZonesDocument {
        let (project, command) = (project, command)
        return try await withDatabase { database, logger in
            try await requireProject(project, of: command, database: database, logger: logger)
            return try await ZoneStore(database: database, logger: logger).zones(projectId: project)
        }
    }

    func versions(before cursor: Int64?, limit: Int) async throws -> PageAnswer<ZonesVersionSummary> {
        let (project, command) = (project, command)
        return PageAnswer(
            try await withDatabase { database, logger in
                // An empty list must mean no versions, not a misspelt project.
                try await requireProject(project, of: command, database: database, logger: logger)
                return try await ZoneStore(database: database, logger: logger).versions(projectId: project, before: cursor, limit: limit)
            })
    }

    func document(version: Int64) async throws -> ZonesDocument {
        let (project, command) = (project, command)
        return try await withDatabase { database, logger in
            try await requireProject(project, of: command, database: database, logger: logger)
            guard let document = try await ZoneStore(database: database, logger: logger).document(projectId: project, version: version)
            else { throw CommandFailure("--version \(version): project \(project) has no such zones version", helpOf: command) }
            return document
        }
    }

    func restore(version restoredVersion: Int64, expectedVersion: Int64?) async throws -> ZonesReplaced {
        let (project, command) = (project, command)
        let quota = try ZoneQuota(environment: EnvironmentReader())
        let (document, version) = try await withDatabase { database, logger in
            try await requireProject(project, of: command, database: database, logger: logger)
            guard
                let document = try await ZoneStore(database: database, logger: logger).document(
                    projectId: project, version: restoredVersion)
            else {
                throw CommandFailure("--version \(restoredVersion): project \(project) has no such zones version", helpOf: command)
            }
            let problems = ZoneValidator.validate(document).map { "\($0)" } + quota.excess(of: document)
            guard problems.isEmpty else {
                throw CommandFailure(
                    "--version \(restoredVersion) is not valid today; nothing was changed:\n"
                        + problems.map { "  \($0)" }.joined(separator: "\n"))
            }
            let version = try await replaceZones(
                of: project, with: document, expectedVersion: expectedVersion, database: database, logger: logger)
            return (document, version)
        }
        return try Self.replaced(document, version: version)
    }

    static func replaced(_ document: ZonesDocument, version: Int64) throws -> ZonesReplaced {
        let lint = try FenceLint.check(document)
        return ZonesReplaced(zones: document.zones.count, version: version, warnings: lint.warnings, warningCount: lint.total)
    }
}

/// Replaces the project's zones as the operator asked (not spaced out, unlike the API), saying
/// which version the project is at when `--if-version` names another. The version has no
/// author: no management key made it.
private func replaceZones(
    of project: String, with document: ZonesDocument, expectedVersion: Int64?, message: String? = nil, database: Database,
    logger: Logger
) async throws -> Int64 {
    do {
        return try await ZoneStore(database: database, logger: logger).replaceZones(
            projectId: project, with: document, expectedVersion: expectedVersion, message: message)
    } catch let mismatch as ZonesVersionMismatch {
        throw versionMismatch(expectedVersion ?? 0, current: mismatch.currentVersion, project: project)
    }
}

private func versionMismatch(_ expected: Int64, current: Int64, project: String) -> CommandFailure {
    CommandFailure("--if-version \(expected): the zones of \(project) are at version \(current); nothing was changed")
}
