import Foundation
import Hummingbird

/// An error answered as `application/problem+json` (RFC 9457), with a machine-readable
/// `type`, so clients can act on it without parsing prose.
package struct Problem: HTTPResponseError, Sendable {
    /// Per-field detail, for validation failures.
    package struct InvalidParameter: Codable, Sendable, Equatable {
        package var name: String
        package var reason: String

        package init(name: String, reason: String) {
            self.name = name
            self.reason = reason
        }
    }

    package var status: HTTPResponse.Status
    package var type: String
    package var title: String
    package var detail: String?
    package var invalidParameters: [InvalidParameter]
    /// Sent with the problem, such as `Retry-After`.
    package var headers: HTTPFields

    package init(
        status: HTTPResponse.Status, type: String, title: String, detail: String? = nil,
        invalidParameters: [InvalidParameter] = [], headers: HTTPFields = [:]
    ) {
        self.status = status
        self.type = type
        self.title = title
        self.detail = detail
        self.invalidParameters = invalidParameters
        self.headers = headers
    }

    struct Body: Encodable {
        var type: String
        var title: String
        var status: Int
        var detail: String?
        var invalidParameters: [InvalidParameter]?

        enum CodingKeys: String, CodingKey {
            case type, title, status, detail
            case invalidParameters = "invalid-params"
        }
    }

    package func response(from request: Request, context: some RequestContext) throws -> Response {
        let body = Body(
            type: "urn:checkin:problem:\(type)", title: title, status: Int(status.code), detail: detail,
            invalidParameters: invalidParameters.isEmpty ? nil : invalidParameters)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var headers = headers
        headers[.contentType] = "application/problem+json"
        return Response(
            status: status, headers: headers,
            body: .init(byteBuffer: ByteBuffer(bytes: try encoder.encode(body))))
    }
}

extension Problem {
    package static func unauthorized(_ detail: String) -> Problem {
        Problem(status: .unauthorized, type: "unauthorized", title: "Missing or unknown API key", detail: detail)
    }

    /// Whole seconds for `Retry-After`, rounded up, at least 1.
    static func retryAfterSeconds(_ wait: Duration) -> Int64 {
        max(1, wait.components.seconds + (wait.components.attoseconds > 0 ? 1 : 0))
    }

    /// Too many failed authentications from this client; `Retry-After` says when to try again.
    package static func tooManyAuthenticationFailures(retryAfter: Duration) -> Problem {
        let seconds = retryAfterSeconds(retryAfter)
        return Problem(
            status: .tooManyRequests, type: "too-many-authentication-failures",
            title: "Too many failed authentications",
            detail: "this client sent too many missing or unknown API keys; try again in \(seconds) s",
            headers: [.retryAfter: String(seconds)])
    }

    /// The project's zones were replaced too recently; `Retry-After` says when they may be again.
    package static func zonesReplacedTooSoon(retryAfter: Duration, minimumInterval: Duration) -> Problem {
        let seconds = retryAfterSeconds(retryAfter)
        return Problem(
            status: .tooManyRequests, type: "zones-replaced-too-soon", title: "The zones were replaced too recently",
            detail:
                "a project's zones may be replaced once every \(Int(minimumInterval.seconds.rounded(.up))) s; try again in \(seconds) s",
            headers: [.retryAfter: String(seconds)])
    }

    /// `If-Match` named a version of the project's zones that is no longer the current one:
    /// someone else replaced them in between. Nothing was changed; `ETag` is the current version.
    package static func zonesVersionMismatch(expected: Int64, current: Int64) -> Problem {
        Problem(
            status: .preconditionFailed, type: "version-mismatch", title: "The zones are at another version",
            detail: "If-Match names version \(expected), but the project's zones are at version \(current); nothing was changed",
            invalidParameters: [InvalidParameter(name: "If-Match", reason: "is not the current version (\(current))")],
            headers: [.eTag: "\"\(current)\""])
    }

    /// The zones document is beyond the project's quota; nothing was changed.
    package static func zoneQuotaExceeded(_ excess: [String]) -> Problem {
        Problem(
            status: .contentTooLarge, type: "zone-quota-exceeded", title: "The zones are beyond the project's quota",
            detail: excess.joined(separator: "; ") + "; nothing was changed",
            invalidParameters: excess.map { InvalidParameter(name: "zones", reason: $0) })
    }

    /// Deliveries that were erased with their device: their rows stay (the delivery log says
    /// what happened) but their payloads are gone, so nothing can be sent again.
    package static func deliveriesErased(_ names: [String]) -> Problem {
        Problem(
            status: .conflict, type: "delivery-erased", title: "Erased with its device",
            detail: "erased with their device, so there is nothing to send again: \(names.joined(separator: ", ")); none was queued again")
    }

    /// Deliveries still pending (queued, in flight or retrying) cannot be replayed: they
    /// are on their way already, and a second copy would race the first.
    package static func deliveriesPending(_ names: [String]) -> Problem {
        Problem(
            status: .conflict, type: "delivery-pending", title: "Still pending",
            detail:
                "still pending (queued, in flight or retrying), so they go out without a replay: \(names.joined(separator: ", ")); none was queued again"
        )
    }

    package static func forbidden(_ detail: String) -> Problem {
        Problem(status: .forbidden, type: "forbidden", title: "Not allowed for this API key", detail: detail)
    }

    package static func notFound(_ detail: String) -> Problem {
        Problem(status: .notFound, type: "not-found", title: "Not found", detail: detail)
    }

    package static func invalid(_ detail: String, parameters: [InvalidParameter] = []) -> Problem {
        Problem(
            status: .badRequest, type: "invalid-request", title: "The request is invalid", detail: detail, invalidParameters: parameters)
    }
}
