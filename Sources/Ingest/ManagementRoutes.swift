import Foundation
import Geofence
import Hummingbird
import Logging
import Persistence
import ServiceSupport
import Shared

/// The management API of a project, authorised by its management key: zones (a zones
/// document and its versions), webhook endpoints, deliveries and API keys; and the
/// operator's projects. Every route is in a group whose POSTs take an `Idempotency-Key`.
struct ManagementRoutes {
    let configuration: IngestConfiguration
    let dependencies: IngestDependencies
    let keys: APIKeyResolver
    let logger: Logger

    var maximumBodyBytes: Int { configuration.maximumBodyBytes }

    func add(to parent: Router<IngestRequestContext>) {
        func idempotent(_ owner: IdempotencyMiddleware.Owner) -> RouterGroup<IngestRequestContext> {
            parent.group().add(
                middleware: IdempotencyMiddleware(
                    owner: owner, store: dependencies.idempotency, keys: keys, maximumBodyBytes: maximumBodyBytes, logger: logger))
        }
        addProjectRoutes(to: idempotent(.operator))
        addStatusRoute(to: parent)
        let router = idempotent(.project)
        addZoneRoutes(to: router)
        addWebhookRoutes(to: router)
        addKeyRoutes(to: router)
        addDeviceRoutes(to: router)
        addEventRoutes(to: router)
        router.get("/v1/deliveries") { request, context in
            let projectId = try await keys.project(for: request, context: context, kind: .management)
            try Self.refuseUnknownParameters(of: request, known: ["status", "endpointId", "deviceId", "limit", "cursor"])
            let statusText = request.uri.queryParameters.get("status")
            let filter = try statusText.map { text in
                guard let filter = DeliveryListFilter(text) else {
                    throw Problem.invalid(
                        "unknown status", parameters: [.init(name: "status", reason: "must be \(DeliveryListFilter.names)")])
                }
                return filter
            }
            let limit = try Self.limit(request.uri.queryParameters.get("limit"), default: 100, within: 1...1000)
            let cursor = try Self.cursor(request.uri.queryParameters.get("cursor"))
            let query = request.uri.queryParameters
            // An endpoint the project does not have lists nothing, as a device it never heard of does.
            let page = try await dependencies.webhooks.deliveries(
                projectId: projectId, filter: filter, endpointId: query.get("endpointId"), deviceId: query.get("deviceId"),
                before: cursor, limit: limit)
            return try json(PageAnswer(page))
        }
        router.get("/v1/deliveries/:id") { request, context in
            let projectId = try await keys.project(for: request, context: context, kind: .management)
            try Self.refuseUnknownParameters(of: request, known: [])
            let text = try context.parameters.decoded("id")
            guard let id = DeliveryIdentifier.number(text),
                let detail = try await dependencies.webhooks.delivery(id: id, projectId: projectId)
            else {
                throw Problem.notFound("no delivery \(text) in this project")
            }
            return try json(detail)
        }
        router.post("/v1/deliveries/:id/replay") { request, context in
            let projectId = try await keys.project(for: request, context: context, kind: .management)
            try Self.refuseUnknownParameters(of: request, known: [])
            let text = try context.parameters.decoded("id")
            guard let id = DeliveryIdentifier.number(text) else { throw Problem.notFound("no delivery \(text) in this project") }
            let replayed = try await dependencies.webhooks.replay(deliveryIds: [id], projectId: projectId)
            guard replayed.erased.isEmpty else { throw Problem.deliveriesErased([text]) }
            guard replayed.pending.isEmpty else { throw Problem.deliveriesPending([text]) }
            guard !replayed.ids.isEmpty else { throw Problem.notFound("no delivery \(text) in this project") }
            return try json(ReplayAnswer(replayed), status: .accepted)
        }
        router.post("/v1/deliveries/replay") { request, context in try await replayDeliveries(request, context: context) }
    }

    /// Several deliveries queued again at once, so that a device's go out in `sequence` order.
    struct ReplayRequest: RequestBody {
        static let members: Set<String> = ["ids", "status", "endpointId"]
        /// `dlv_…` identifiers.
        var ids: [String]?
        var status: DeliveryStatus?
        var endpointId: String?
    }

    func replayDeliveries(_ request: Request, context: IngestRequestContext) async throws -> Response {
        let projectId = try await keys.project(for: request, context: context, kind: .management)
        try Self.refuseUnknownParameters(of: request, known: [])
        let body = try await request.body.collect(upTo: 1 << 20)
        let replay = try Self.decodeBody(
            ReplayRequest.self, from: body, shape: "the body must be {\"ids\": [delivery ids]} or {\"status\": \"failed\"}")
        if let texts = replay.ids, replay.status == nil, replay.endpointId == nil {
            guard !texts.isEmpty, texts.count <= 10_000 else {
                throw Problem.invalid("1 to 10,000 ids", parameters: [.init(name: "ids", reason: "must hold 1 to 10,000 delivery ids")])
            }
            let ids = texts.compactMap { DeliveryIdentifier.number($0) }
            guard ids.count == texts.count else {
                throw Problem.invalid(
                    "not delivery ids",
                    parameters: texts.indices.filter { DeliveryIdentifier.number(texts[$0]) == nil }.map {
                        .init(name: "ids[\($0)]", reason: "must be a delivery id, such as dlv_42")
                    })
            }
            let replayed = try await dependencies.webhooks.replay(deliveryIds: ids, projectId: projectId)
            guard replayed.missing.isEmpty else {
                let names = replayed.missing.map(DeliveryIdentifier.text).joined(separator: ", ")
                throw Problem.notFound("not deliveries of this project: \(names); none was queued again")
            }
            guard replayed.erased.isEmpty else { throw Problem.deliveriesErased(replayed.erased.map(DeliveryIdentifier.text)) }
            guard replayed.pending.isEmpty else { throw Problem.deliveriesPending(replayed.pending.map(DeliveryIdentifier.text)) }
            return try json(ReplayAnswer(replayed), status: .accepted)
        }
        guard replay.ids == nil, replay.status == .failed else {
            throw Problem.invalid(
                "give either ids or status failed", parameters: [.init(name: "status", reason: "must be failed when ids are not given")])
        }
        if let endpointId = replay.endpointId {
            if let problem = InputLimits.identifierProblem(endpointId) {
                throw Problem.invalid("bad endpointId", parameters: [.init(name: "endpointId", reason: problem)])
            }
            guard try await dependencies.webhooks.endpoint(id: endpointId, projectId: projectId) != nil else {
                throw Problem.notFound("no webhook endpoint \(endpointId) in this project")
            }
        }
        let replayed = try await dependencies.webhooks.replayFailed(projectId: projectId, endpointId: replay.endpointId)
        return try json(ReplayAnswer(replayed), status: .accepted)
    }

    func json(_ value: some Encodable, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) throws -> Response {
        var headers = headers
        headers[.contentType] = "application/json"
        return Response(
            status: status, headers: headers,
            body: .init(byteBuffer: ByteBuffer(bytes: try WireJSON.encoder().encode(value))))
    }
}
