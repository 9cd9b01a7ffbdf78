import Foundation
import Hummingbird
import Persistence
import ServiceSupport
import Shared

/// Projects (operator key) and a project's API keys (its management key). A key is in the
/// answer that made it and nowhere else; lists show its first characters only.
extension ManagementRoutes {
    func addProjectRoutes(to router: RouterGroup<IngestRequestContext>) {
        router.post("/v1/projects") { request, context in try await createProject(request, context: context) }
        router.get("/v1/projects") { request, context in
            try keys.requireOperator(request, context: context)
            try Self.refuseUnknownParameters(of: request, known: ["limit", "cursor"])
            let limit = try Self.limit(request.uri.queryParameters.get("limit"), default: 100, within: 1...1000)
            let cursor = try request.uri.queryParameters.get("cursor").map { text in
                guard InputLimits.projectIdProblem(String(text)) == nil else {
                    throw Problem.invalid(
                        "unknown cursor", parameters: [.init(name: "cursor", reason: "must be a nextCursor this API returned")])
                }
                return String(text)
            }
            let page = try await dependencies.projects.projects(after: cursor, limit: limit)
            return try json(PageAnswer(page))
        }
    }

    func addKeyRoutes(to router: RouterGroup<IngestRequestContext>) {
        router.get("/v1/keys") { request, context in
            let projectId = try await keys.project(for: request, context: context, kind: .management)
            try Self.refuseUnknownParameters(of: request, known: [])
            return try json(APIKeyList(keys: try await dependencies.projects.keys(projectId: projectId)))
        }
        router.post("/v1/keys") { request, context in
            let projectId = try await keys.project(for: request, context: context, kind: .management)
            try Self.refuseUnknownParameters(of: request, known: [])
            let body = try await optionalBody(NewKeyRequest.self, of: request) { body in
                var problems: [Problem.InvalidParameter] = []
                if body.kind.flatMap(ProjectStore.KeyKind.init(rawValue:)) == nil {
                    problems.append(.init(name: "kind", reason: "must be management or device"))
                }
                if let name = body.name, let problem = InputLimits.textProblem(name, maximumLength: 200) {
                    problems.append(.init(name: "name", reason: problem))
                }
                return problems
            }
            guard let kind = body?.kind.flatMap(ProjectStore.KeyKind.init(rawValue:)) else {
                throw Problem.invalid(
                    "the body must be {\"kind\": \"management\" or \"device\"}",
                    parameters: [.init(name: "kind", reason: "must be management or device")])
            }
            let issued = try await dependencies.projects.issueKey(projectId: projectId, kind: kind, name: body?.name)
            logger.info("API key created", metadata: ["projectId": "\(projectId)", "keyId": "\(issued.record.id)"])
            return try json(KeyView(issued.record, key: issued.key), status: .created)
        }
        router.delete("/v1/keys/:id") { request, context in
            let projectId = try await keys.project(for: request, context: context, kind: .management)
            try Self.refuseUnknownParameters(of: request, known: [])
            let id = try keyId(context)
            switch try await dependencies.projects.revokeKey(id: id, projectId: projectId) {
            case .revoked:
                keys.forget(keyId: id)
                logger.info("API key revoked", metadata: ["projectId": "\(projectId)", "keyId": "\(id)"])
                return Response(status: .noContent)
            case .notFound:
                throw Problem.notFound("no key \(id) in this project")
            case .lastManagementKey:
                throw Problem(
                    status: .conflict, type: "last-management-key", title: "The project's last management key",
                    detail: "create another management key (POST /v1/keys) before revoking this one, or rotate it")
            }
        }
        router.post("/v1/keys/:id/rotate") { request, context in
            let projectId = try await keys.project(for: request, context: context, kind: .management)
            try Self.refuseUnknownParameters(of: request, known: [])
            let id = try keyId(context)
            let overlap =
                try await optionalBody(RotateRequest.self, of: request)?.overlapSeconds ?? ProjectStore.defaultRotationOverlapSeconds
            guard (0...ProjectStore.maximumRotationOverlapSeconds).contains(overlap) else {
                throw Problem.invalid(
                    "overlapSeconds out of range",
                    parameters: [
                        .init(
                            name: "overlapSeconds", reason: "must be a whole number from 0 to \(ProjectStore.maximumRotationOverlapSeconds)"
                        )
                    ])
            }
            switch try await dependencies.projects.rotateKey(id: id, projectId: projectId, overlap: .seconds(overlap)) {
            case .rotated(let new, let old):
                // The old key's cached answer would outlive its new expiry here.
                keys.forget(keyId: id)
                logger.info("API key rotated", metadata: ["projectId": "\(projectId)", "keyId": "\(id)", "newKeyId": "\(new.record.id)"])
                var view = KeyView(new.record, key: new.key)
                view.replacedKeyId = old.id
                view.replacedKeyExpiresAt = old.expiresAt
                return try json(view, status: .created)
            case .notFound:
                throw Problem.notFound("no key \(id) in this project")
            case .notActive:
                throw Problem(
                    status: .conflict, type: "key-not-active", title: "The key is revoked or expired",
                    detail: "only a working key can be rotated; create a new one with POST /v1/keys")
            }
        }
    }

    func createProject(_ request: Request, context: IngestRequestContext) async throws -> Response {
        try keys.requireOperator(request, context: context)
        try Self.refuseUnknownParameters(of: request, known: [])
        guard let body = try await optionalBody(NewProjectRequest.self, of: request), let id = body.id else {
            throw Problem.invalid("the body must be {\"id\": …, \"name\"?: …}", parameters: [.init(name: "id", reason: "is required")])
        }
        if let problem = InputLimits.projectIdProblem(id) {
            throw Problem.invalid("bad project id", parameters: [.init(name: "id", reason: problem)])
        }
        let name = body.name ?? id
        if let problem = InputLimits.textProblem(name, maximumLength: 200) {
            throw Problem.invalid("bad project name", parameters: [.init(name: "name", reason: problem)])
        }
        guard let created = try await dependencies.projects.createProjectWithKeys(id: id, name: name) else {
            throw Problem(
                status: .conflict, type: "project-exists", title: "The project exists",
                detail: "project '\(id)' exists; its keys are managed with its management key (/v1/keys)")
        }
        logger.info("project created", metadata: ["projectId": "\(id)"])
        return try json(NewProjectAnswer(created), status: .created)
    }

    struct NewProjectRequest: RequestBody {
        static let members: Set<String> = ["id", "name"]
        var id: String?
        var name: String?
    }

    struct NewKeyRequest: RequestBody {
        static let members: Set<String> = ["kind", "name"]
        var kind: String?
        var name: String?
    }

    struct RotateRequest: RequestBody {
        static let members: Set<String> = ["overlapSeconds"]
        var overlapSeconds: Int?
    }

    typealias KeyView = APIKeyView

    /// The `:id` of a key route; a 404 when it cannot be a key's identifier.
    func keyId(_ context: IngestRequestContext) throws -> String {
        let id = try context.parameters.decoded("id")
        guard Self.couldBeIdentifier(id) else { throw Problem.notFound("no key \(id) in this project") }
        return id
    }
}
