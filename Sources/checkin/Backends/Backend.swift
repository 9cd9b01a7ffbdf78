import ArgumentParser

/// Where a management command does its work: through the API of a remote deployment when
/// `CHECKIN_API_URL` is set, on the database (and broker) directly otherwise. Each family of
/// commands has a protocol of what it asks (``KeysBackend``, ``ZonesBackend``, …) with one
/// implementation of each kind; the commands print what either answers, in the same words.
enum Backend {
    /// The family's remote implementation with the project's management key, or its direct one.
    static func select<Family>(
        project: String, remote: (ManagementAPI) -> Family, direct: () -> Family
    ) throws -> Family {
        guard let settings = try RemoteSettings.fromEnvironment() else { return direct() }
        return remote(try ManagementAPI(settings: settings, project: project))
    }
}
