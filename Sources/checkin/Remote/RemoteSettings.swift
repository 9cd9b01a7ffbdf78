import ArgumentParser
import CommandSupport
import Foundation
import ServiceSupport

/// Where the management commands send their requests when they run away from the deployment:
/// `CHECKIN_API_URL` (the ingest's public URL) and the keys that authorise them there.
///
/// A project's management key comes from `CHECKIN_API_KEY`, or from the file
/// `CHECKIN_API_KEY_FILE` names (a mounted secret). That file may be a directory instead, with
/// one file per project named by its id (a Kubernetes secret of several projects' keys): then
/// `--project` picks the key, and a command can never act on another project than it names.
/// The operator routes (`checkin projects`) take `CHECKIN_OPERATOR_KEY`, the variable the
/// ingest reads its operator key from.
struct RemoteSettings: Sendable {
    var baseURL: String
    var managementKey: String?
    var managementKeyFile: String?
    var operatorKey: String?
    /// Whether `CHECKIN_DATABASE_URL` is set too: the database-direct commands then keep working.
    var databaseConfigured: Bool

    /// The settings of the environment; nil when `CHECKIN_API_URL` is unset (every command
    /// then works on the database and the broker directly, as the services do).
    static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment) throws -> RemoteSettings? {
        func value(_ name: String) -> String? {
            guard let text = environment[name]?.trimmingCharacters(in: .whitespacesAndNewlines), !text.isEmpty else { return nil }
            return text
        }
        guard let url = value("CHECKIN_API_URL") else { return nil }
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
            scheme == "http" || scheme == "https", let host = components.host, !host.isEmpty,
            components.query == nil, components.fragment == nil
        else {
            throw ConfigurationError(
                variable: "CHECKIN_API_URL", value: url, expected: "the API's http or https URL, such as https://checkin.example.com")
        }
        var base = url
        while base.hasSuffix("/") { base.removeLast() }
        return RemoteSettings(
            baseURL: base, managementKey: value("CHECKIN_API_KEY"), managementKeyFile: value("CHECKIN_API_KEY_FILE"),
            operatorKey: value("CHECKIN_OPERATOR_KEY"), databaseConfigured: value("CHECKIN_DATABASE_URL") != nil)
    }

    /// The management key of `project`: `CHECKIN_API_KEY`, or the file (or the project's file in
    /// the directory) `CHECKIN_API_KEY_FILE` names.
    func managementKey(project: String) throws -> String {
        if let managementKey { return managementKey }
        guard let path = managementKeyFile else {
            throw CommandFailure(
                "CHECKIN_API_URL is set but no management key is: set CHECKIN_API_KEY, or CHECKIN_API_KEY_FILE to a file holding it")
        }
        var isDirectory: ObjCBool = false
        let file =
            FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && isDirectory.boolValue
            ? URL(fileURLWithPath: path).appendingPathComponent(project).path : path
        let text = String(decoding: try readInputFile(file, naming: "CHECKIN_API_KEY_FILE \(file)"), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty else { throw CommandFailure("CHECKIN_API_KEY_FILE \(file): is empty, not a management key") }
        return text
    }

    /// The operator key, for `/v1/projects`.
    func requireOperatorKey() throws -> String {
        guard let operatorKey else {
            throw CommandFailure(
                "CHECKIN_API_URL is set but CHECKIN_OPERATOR_KEY is not: projects are created and listed with the operator key")
        }
        return operatorKey
    }
}

/// Refuses a command that works on Postgres or the broker directly (nothing in the API does
/// what it does) when `CHECKIN_API_URL` says the deployment is remote and `CHECKIN_DATABASE_URL`
/// does not say where its database is: the default, a local Postgres, is not the deployment's.
func requireDatabaseAccess(_ command: any ParsableCommand.Type) throws {
    guard let remote = try RemoteSettings.fromEnvironment(), !remote.databaseConfigured else { return }
    let name = Checkin.path(to: command).map { "checkin \($0)" } ?? "this command"
    throw CommandFailure(
        "\(name) is a database-direct command: the API at \(remote.baseURL) (CHECKIN_API_URL) does not offer it; "
            + "run it where the database is reachable, with CHECKIN_DATABASE_URL set (see docs/commands.md, Remote use)")
}
