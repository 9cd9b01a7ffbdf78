import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOConcurrencyHelpers
import Persistence
import ServiceSupport

/// `Idempotency-Key` on the management API's POSTs: a client that resends a request (after
/// a timeout, say) with the same key gets the first answer again, marked
/// `Idempotent-Replayed: true`, instead of a second endpoint, key or replay. The same key
/// with another method, path or query, `If-Match` or body, or while its first request still runs,
/// is a 409.
///
/// It wraps every route of the management groups, so a POST route added there has it by
/// construction. Answers are kept per owner of the key the group's routes take (the
/// operator, or the key's project) for `IdempotencyStore.retention`; those that hold only
/// for their moment (`keeps`) are not, so a resend runs again.
struct IdempotencyMiddleware: RouterMiddleware {
    typealias Context = IngestRequestContext

    static let header = HTTPField.Name("Idempotency-Key")!
    static let replayedHeader = HTTPField.Name("Idempotent-Replayed")!
    static let maximumKeyLength = 255

    /// Whose answers a group's keys name: two projects may well pick the same idempotency key.
    enum Owner {
        /// The project of the request's management key.
        case project
        /// The operator, whose key the group's routes take.
        case `operator`
    }

    let owner: Owner
    let store: IdempotencyStore
    let keys: APIKeyResolver
    let maximumBodyBytes: Int
    let logger: Logger

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard request.method == .post, let key = request.headers[Self.header] else { return try await next(request, context) }
        guard !key.trimmingCharacters(in: .whitespaces).isEmpty, key.count <= Self.maximumKeyLength else {
            throw Problem.invalid(
                "bad Idempotency-Key",
                parameters: [.init(name: "Idempotency-Key", reason: "must be 1 to \(Self.maximumKeyLength) characters")])
        }
        let scope: String
        switch owner {
        case .project:
            scope = "project:" + (try await keys.project(for: request, context: context, kind: .management))
        case .operator:
            // Without the operator key the route refuses the request (401, or 404 while the
            // operator routes are off), whatever was kept under that idempotency key.
            guard keys.carriesOperatorKey(request) else { return try await next(request, context) }
            scope = "operator"
        }
        var request = request
        let body = try await request.collectBody(upTo: maximumBodyBytes)
        let fingerprint = IdempotencyStore.Fingerprint(
            method: request.method.rawValue, path: Self.target(of: request), ifMatch: Self.ifMatch(of: request),
            bodyHash: SHA256.hash(data: Data(buffer: body)).map { String(format: "%02x", $0) }.joined())
        switch try await store.claim(scope: scope, key: key, fingerprint: fingerprint) {
        case .claimed(let claimed):
            return try await store.holding(claimed) {
                try await answer(request, context: context, next: next, claimed: claimed)
            }
        case .replay(let answer):
            var headers: HTTPFields = [Self.replayedHeader: "true"]
            headers[.contentType] = answer.contentType
            headers[.location] = answer.location
            headers[.eTag] = answer.entityTag
            return Response(
                status: HTTPResponse.Status(code: answer.status), headers: headers,
                body: .init(byteBuffer: ByteBuffer(bytes: answer.body)))
        case .inProgress:
            throw Problem(
                status: .conflict, type: "idempotency-key-in-progress", title: "A request with this Idempotency-Key is running",
                detail: "resend it once the first one has been answered")
        case .mismatch:
            throw Problem(
                status: .conflict, type: "idempotency-key-reused", title: "The Idempotency-Key was used for another request",
                detail: "a key stands for one request (method, path and query, If-Match and body); use a new key for a new request")
        }
    }

    /// The path and its query as sent: `?dryRun=true` or `?message=` make another request.
    static func target(of request: Request) -> String {
        guard let query = request.uri.query, !query.isEmpty else { return request.uri.path }
        return request.uri.path + "?" + query
    }

    /// `If-Match` as sent (every field of it, in order); nil without one. Spelt differently,
    /// the same version is another request: a client resends what it sent.
    static func ifMatch(of request: Request) -> String? {
        let values = request.headers[values: .ifMatch]
        return values.isEmpty ? nil : values.joined(separator: ", ")
    }

    /// Whether an answer is kept and replayed to resends, rather than the request run again.
    ///
    /// Kept: what the request did (2xx), and refusals that stay true however often it is sent
    /// (400, 404, 413, 422, …): a resend gets the same answer without running.
    ///
    /// Not kept, as each holds for its moment only and a replay would outlive it:
    /// - 5xx: the server failed, not the request; a resend may well succeed.
    /// - 408 and 429: too slow, or too soon (the zones replaced within the interval): they say
    ///   when to come back (`Retry-After`), and a client that does must not get them again.
    /// - 409: the resource's state then (a project that exists, a key no longer active, a
    ///   delivery erased): a 409 changed nothing, and a resend reads the state of now.
    /// - 412: `If-Match` named a version that was not the current one; the same request is
    ///   right once that version is (a client that sent it ahead of the change making it).
    static func keeps(_ status: HTTPResponse.Status) -> Bool {
        switch status.code {
        case 408, 409, 412, 429: false
        case 500...: false
        default: true
        }
    }

    /// Runs the claimed request and keeps its answer when `keeps` says so: a resend gets the
    /// same answer. Otherwise the key is given up, and a resend runs again.
    private func answer(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response,
        claimed: IdempotencyStore.ClaimedKey
    ) async throws -> Response {
        let response: Response
        do {
            response = try await next(request, context)
        } catch let error as any HTTPResponseError where error.status.code < 500 {
            response = try error.response(from: request, context: context)
        } catch {
            try? await store.release(claimed)
            throw error
        }
        guard Self.keeps(response.status) else {
            try? await store.release(claimed)
            return response
        }
        let collector = BodyCollector()
        try await response.body.write(collector)
        let body = collector.buffer.withLockedValue { $0 }
        do {
            try await store.complete(
                claimed,
                answer: IdempotencyStore.Answer(
                    status: Int(response.status.code), contentType: response.headers[.contentType],
                    location: response.headers[.location], entityTag: response.headers[.eTag], body: Array(buffer: body)))
        } catch {
            // The request has done its work: the key stays claimed (a resend is a 409 until the
            // claim, no longer renewed, counts as abandoned) rather than let a resend do it twice.
            logger.error("an idempotent answer could not be stored", metadata: ["scope": "\(claimed.scope)", "error": "\(error)"])
        }
        var collected = response
        collected.body = .init(byteBuffer: body)
        return collected
    }
}

/// Gathers a response body that is about to be stored.
private struct BodyCollector: ResponseBodyWriter {
    let buffer = NIOLockedValueBox(ByteBuffer())

    mutating func write(_ buffer: ByteBuffer) async throws {
        self.buffer.withLockedValue { $0.writeImmutableBuffer(buffer) }
    }

    consuming func finish(_ trailingHeaders: HTTPFields?) async throws {}
}
