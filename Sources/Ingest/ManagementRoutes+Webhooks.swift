import Foundation
import Hummingbird
import Persistence
import ServiceSupport
import Shared

/// Webhook endpoints: add (URL checked against the address policy), list with their
/// state, disable and enable, rotate the secret, remove. A secret is in the answer
/// that created it and nowhere else.
extension ManagementRoutes {
    func addWebhookRoutes(to router: RouterGroup<IngestRequestContext>) {
        router.post("/v1/webhooks") { request, context in try await addEndpoint(request, context: context) }
        router.get("/v1/webhooks") { request, context in
            let projectId = try await keys.project(for: request, context: context, kind: .management)
            try Self.refuseUnknownParameters(of: request, known: [])
            // Whole, not paged: a project has a handful; in an object like every other answer.
            let endpoints = try await dependencies.webhooks.endpoints(projectId: projectId)
            return try json(WebhookEndpointList(webhooks: endpoints.map { EndpointView($0) }))
        }
        router.get("/v1/webhooks/:id") { request, context in
            let projectId = try await keys.project(for: request, context: context, kind: .management)
            try Self.refuseUnknownParameters(of: request, known: [])
            let id = try endpointId(context)
            return try json(EndpointView(try existing(try await dependencies.webhooks.endpoint(id: id, projectId: projectId), id)))
        }
        router.delete("/v1/webhooks/:id") { request, context in
            let projectId = try await keys.project(for: request, context: context, kind: .management)
            try Self.refuseUnknownParameters(of: request, known: [])
            let id = try endpointId(context)
            guard try await dependencies.webhooks.removeEndpoint(id: id, projectId: projectId) else {
                throw Problem.notFound("no endpoint \(id) in this project")
            }
            return Response(status: .noContent)
        }
        router.post("/v1/webhooks/:id/disable") { request, context in
            let projectId = try await keys.project(for: request, context: context, kind: .management)
            try Self.refuseUnknownParameters(of: request, known: [])
            let id = try endpointId(context)
            let body = try await optionalBody(DisableRequest.self, of: request)
            let reason = body?.reason ?? "disabled through the management API"
            // Counted in code points, as the document's maxLength is; no control characters (Postgres cannot store NUL).
            if let problem = InputLimits.textProblem(reason, maximumLength: 1024) {
                throw Problem.invalid("bad reason", parameters: [.init(name: "reason", reason: problem)])
            }
            let endpoint = try await dependencies.webhooks.disableEndpoint(id: id, projectId: projectId, reason: reason)
            return try json(EndpointView(try existing(endpoint, id)))
        }
        router.post("/v1/webhooks/:id/enable") { request, context in
            let projectId = try await keys.project(for: request, context: context, kind: .management)
            try Self.refuseUnknownParameters(of: request, known: [])
            let id = try endpointId(context)
            return try json(EndpointView(try existing(try await dependencies.webhooks.enableEndpoint(id: id, projectId: projectId), id)))
        }
        router.post("/v1/webhooks/:id/rotate-secret") { request, context in
            let projectId = try await keys.project(for: request, context: context, kind: .management)
            try Self.refuseUnknownParameters(of: request, known: [])
            let id = try endpointId(context)
            let secret = try validatedSecret(try await optionalBody(SecretRequest.self, of: request)?.secret)
            let rotation = try await dependencies.webhooks.rotateSecret(
                id: id, projectId: projectId, newSecret: secret, window: configuration.secretRotationWindow)
            guard let rotation else { throw Problem.notFound("no webhook endpoint \(id) in this project") }
            var view = EndpointView(rotation.endpoint)
            view.secret = rotation.secret
            return try json(view)
        }
    }

    struct EndpointRequest: RequestBody {
        static let members: Set<String> = ["url", "secret"]
        var url: String
        var secret: String?
    }

    struct SecretRequest: RequestBody {
        static let members: Set<String> = ["secret"]
        var secret: String?
    }

    struct DisableRequest: RequestBody {
        static let members: Set<String> = ["reason"]
        var reason: String?
    }

    typealias EndpointView = WebhookEndpointView

    func addEndpoint(_ request: Request, context: IngestRequestContext) async throws -> Response {
        let projectId = try await keys.project(for: request, context: context, kind: .management)
        try Self.refuseUnknownParameters(of: request, known: [])
        let body = try await request.body.collect(upTo: 64 << 10)
        let endpoint = try Self.decodeBody(
            EndpointRequest.self, from: body, shape: "the body must be {\"url\": …, \"secret\"?: \"whsec_…\"}")
        if let problem = InputLimits.urlProblem(endpoint.url) {
            throw Problem.invalid("bad URL", parameters: [.init(name: "url", reason: problem)])
        }
        do {
            _ = try configuration.webhookURLPolicy.check(endpoint.url)
        } catch {
            throw Problem.invalid("the webhook URL is not allowed: \(error.reason)", parameters: [.init(name: "url", reason: error.reason)])
        }
        let secret = try validatedSecret(endpoint.secret)
        let created = try await dependencies.webhooks.addEndpoint(projectId: projectId, url: endpoint.url, secrets: [secret])
        return try json(EndpointView(created, secret: secret), status: .created)
    }

    /// The given secret if it is a valid new one, or a generated one.
    func validatedSecret(_ given: String?) throws -> String {
        guard let given else { return WebhookSecret.generate() }
        guard (try? WebhookSecret.validateNew(given)) != nil else {
            throw Problem.invalid(
                "bad secret",
                parameters: [.init(name: "secret", reason: "must be whsec_ followed by the base64 of 24 to 64 random bytes")])
        }
        return given
    }

    /// A JSON body that may be left out altogether.
    func optionalBody<Body: Decodable>(
        _ type: Body.Type, of request: Request, problems: (Body) -> [Problem.InvalidParameter] = { _ in [] }
    ) async throws -> Body? {
        let bytes = try await request.body.collect(upTo: 64 << 10)
        guard bytes.readableBytes > 0 else { return nil }
        return try Self.decodeBody(type, from: bytes, shape: "the body is not valid", problems: problems)
    }

    /// A JSON body decoded, or a 400 saying what is wrong and, where it can, naming the members
    /// at fault in `invalid-params` (every one a document names, see `DecodingFailures`).
    /// UTF-8 is checked first: the decoder would take bytes that are not text, and what they
    /// were read as is no one's intent.
    ///
    /// The body must be JSON by RFC 8259 (no trailing commas, no comments), and a body of a
    /// `RequestBody` type may hold only its members: the unknown ones are named together with
    /// every other problem, in one answer, with those `problems` finds in the decoded body.
    static func decodeBody<Body: Decodable>(
        _ type: Body.Type, from bytes: ByteBuffer, shape: String, decoder: JSONDecoder = JSONDecoder(),
        problems: (Body) -> [Problem.InvalidParameter] = { _ in [] }
    ) throws -> Body {
        guard String(validating: bytes.readableBytesView, as: UTF8.self) != nil else {
            throw Problem.invalid("\(shape): the body is not valid UTF-8")
        }
        guard let members = StrictJSON.topLevelMembers(of: bytes.readableBytesView) else {
            throw Problem.invalid("\(shape): the body is not JSON (RFC 8259: no trailing commas, no comments)")
        }
        let known = (type as? any RequestBody.Type)?.members
        let unknown = members.filter { name in known.map { !$0.contains(name) } ?? false }.map {
            Problem.InvalidParameter(name: $0, reason: "is not a member of this request")
        }
        let body: Body
        do {
            body = try decoder.decode(type, from: Data(buffer: bytes))
        } catch {
            let parameters = DecodingErrorText.parameters(error).map { Problem.InvalidParameter(name: $0.name, reason: $0.reason) }
            throw Problem.invalid("\(shape): \(DecodingErrorText.describe(error))", parameters: parameters + unknown)
        }
        let found = problems(body) + unknown
        guard found.isEmpty else {
            throw Problem.invalid("\(shape): " + found.map { "\($0.name) \($0.reason)" }.joined(separator: "; "), parameters: found)
        }
        return body
    }

    /// The `:id` of an endpoint route; a 404 when it cannot be an endpoint's identifier.
    func endpointId(_ context: IngestRequestContext) throws -> String {
        let id = try context.parameters.decoded("id")
        guard Self.couldBeIdentifier(id) else { throw Problem.notFound("no webhook endpoint \(id) in this project") }
        return id
    }

    func existing(_ endpoint: WebhookEndpoint?, _ id: String) throws -> WebhookEndpoint {
        guard let endpoint else { throw Problem.notFound("no webhook endpoint \(id) in this project") }
        return endpoint
    }
}
