import ArgumentParser
import CommandSupport
import Ingest
import Persistence

/// What `checkin keys` asks of a project's keys.
protocol KeysBackend: Sendable {
    func keys() async throws -> [APIKeyRecord]
    /// The new key, with `key` (shown this once).
    func create(kind: ProjectStore.KeyKind, name: String?) async throws -> APIKeyView
    func revoke(id: String) async throws
    /// The new key, with `key`, `replacedKeyId` and `replacedKeyExpiresAt`.
    func rotate(id: String, overlapSeconds: Int) async throws -> APIKeyView
}

/// The keys of `project`, for `command` (whose help a refusal points to).
func keysBackend(project: String, of command: any ParsableCommand.Type) throws -> any KeysBackend {
    try Backend.select(
        project: project, remote: { RemoteKeys(api: $0) }, direct: { DirectKeys(project: project, command: command) })
}

struct RemoteKeys: KeysBackend {
    let api: ManagementAPI

    func keys() async throws -> [APIKeyRecord] { try await api.keys() }
    func create(kind: ProjectStore.KeyKind, name: String?) async throws -> APIKeyView {
        try await api.createKey(kind: kind, name: name)
    }
    func revoke(id: String) async throws { try await api.revokeKey(id: id) }
    func rotate(id: String, overlapSeconds: Int) async throws -> APIKeyView {
        try await api.rotateKey(id: id, overlapSeconds: overlapSeconds)
    }
}

struct DirectKeys: KeysBackend {
    let project: String
    let command: any ParsableCommand.Type

    func keys() async throws -> [APIKeyRecord] {
        let project = project
        return try await withProjects(project, of: command) { projects in try await projects.keys(projectId: project) }
    }

    func create(kind: ProjectStore.KeyKind, name: String?) async throws -> APIKeyView {
        let project = project
        let issued = try await withProjects(project, of: command) { projects in
            try await projects.issueKey(projectId: project, kind: kind, name: name)
        }
        return APIKeyView(issued.record, key: issued.key)
    }

    func revoke(id: String) async throws {
        let project = project
        let outcome = try await withProjects(project, of: command) { projects in
            try await projects.revokeKey(id: id, projectId: project)
        }
        switch outcome {
        case .revoked: return
        case .notFound: throw CommandFailure("no key '\(id)' in project '\(project)'", helpOf: command)
        case .lastManagementKey:
            throw CommandFailure(
                "'\(id)' is the last management key of '\(project)' without an expiry; `checkin keys create --project \(project) --kind management` first"
            )
        }
    }

    func rotate(id: String, overlapSeconds: Int) async throws -> APIKeyView {
        let project = project
        let outcome = try await withProjects(project, of: command) { projects in
            try await projects.rotateKey(id: id, projectId: project, overlap: .seconds(overlapSeconds))
        }
        switch outcome {
        case .rotated(let new, let old):
            var view = APIKeyView(new.record, key: new.key)
            view.replacedKeyId = old.id
            view.replacedKeyExpiresAt = old.expiresAt
            return view
        case .notFound: throw CommandFailure("no key '\(id)' in project '\(project)'", helpOf: command)
        case .notActive:
            throw CommandFailure("key '\(id)' is revoked or expired; `checkin keys create` makes a new one", helpOf: command)
        }
    }
}

/// What `checkin projects` asks: the operator's view of every project.
protocol ProjectsBackend: Sendable {
    func projects() async throws -> [ProjectRecord]
    /// The project and its two keys (shown this once); a project that exists is refused.
    func create(id: String, name: String?) async throws -> NewProjectAnswer
}

/// Through the API with the operator key when `CHECKIN_API_URL` is set; the database otherwise.
func projectsBackend(of command: any ParsableCommand.Type) throws -> any ProjectsBackend {
    guard let settings = try RemoteSettings.fromEnvironment() else { return DirectProjects(command: command) }
    return RemoteProjects(api: try ManagementAPI(operatorOf: settings))
}

struct RemoteProjects: ProjectsBackend {
    let api: ManagementAPI

    func projects() async throws -> [ProjectRecord] {
        try await allPages { cursor in
            let page = try await api.projects(after: cursor, limit: 1000)
            return (page.items, page.nextCursor)
        }
    }

    func create(id: String, name: String?) async throws -> NewProjectAnswer { try await api.createProject(id: id, name: name) }
}

struct DirectProjects: ProjectsBackend {
    let command: any ParsableCommand.Type

    func projects() async throws -> [ProjectRecord] {
        try await withDatabase { database, logger in
            let store = ProjectStore(database: database, logger: logger)
            return try await allPages { cursor in
                let page = try await store.projects(after: cursor, limit: 1000)
                return (page.projects, page.nextCursor)
            }
        }
    }

    func create(id: String, name: String?) async throws -> NewProjectAnswer {
        let command = command
        return try await withDatabase { database, logger in
            // Run twice, it used to make a second key pair without a word; the project and
            // its keys are made together, so a failure leaves no project without keys.
            let projects = ProjectStore(database: database, logger: logger)
            guard let created = try await projects.createProjectWithKeys(id: id, name: name ?? id) else {
                throw CommandFailure(
                    "project '\(id)' exists; `checkin keys create --project \(id) --kind device|management` gives it another key",
                    helpOf: command)
            }
            return NewProjectAnswer(created)
        }
    }
}

/// Every item of a listing read page after page, each page naming the cursor of the next.
func allPages<Item>(_ page: (_ cursor: String?) async throws -> (items: [Item], next: String?)) async throws -> [Item] {
    var all: [Item] = []
    var cursor: String?
    repeat {
        let (items, next) = try await page(cursor)
        all += items
        cursor = next
    } while cursor != nil
    return all
}
