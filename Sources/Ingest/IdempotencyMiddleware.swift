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
/// with another method, path or body, or while its first request still runs, is a 409.
///
/// It wraps every route of the management groups, so a POST route added there has it by
/// construction. Answers are kept per owner of the key the group's routes take (the
/// operator, or the key's project) for `IdempotencyStore.retention`; server errors (5xx) are
/// not kept, so a resend runs again.
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
            method: request.method.rawValue, path: request.uri.path,
            bodyHash: SHA256.hash(data: Data(buffer: body)).map { String(format: "%02x", $0) }.joined())
        switch try await store.claim(scope: scope, key: key, fingerprint: fingerprint) {
        case .claimed:
            return try await answer(request, context: context, next: next, scope: scope, key: key)
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
                detail: "a key stands for one request (method, path and body); use a new key for a new request")
        }
    }

    /// Runs the claimed request and keeps its answer, refusals (4xx) included: a resend gets
    /// the same refusal. A server error gives the key up.
    private func answer(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response, scope: String, key: String
    ) async throws -> Response {
        let response: Response
        do {
            response = try await next(request, context)
        } catch let error as any HTTPResponseError where error.status.code < 500 {
            response = try error.response(from: request, context: context)
        } catch {
            try? await store.release(scope: scope, key: key)
            throw error
        }
        guard response.status.code < 500 else {
            try? await store.release(scope: scope, key: key)
            return response
        }
        let collector = BodyCollector()
        try await response.body.write(collector)
        let body = collector.buffer.withLockedValue { $0 }
        do {
            try await store.complete(
                scope: scope, key: key,
                answer: IdempotencyStore.Answer(
                    status: Int(response.status.code), contentType: response.headers[.contentType],
                    location: response.headers[.location], entityTag: response.headers[.eTag], body: Array(buffer: body)))
        } catch {
            // The request has done its work: the key stays claimed (a resend is a 409 until
            // the claim counts as abandoned) rather than let a resend do it twice.
            logger.error("an idempotent answer could not be stored", metadata: ["scope": "\(scope)", "error": "\(error)"])
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
