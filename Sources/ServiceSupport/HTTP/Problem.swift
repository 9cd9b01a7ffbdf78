import Foundation
import Hummingbird

/// An error answered as `application/problem+json` (RFC 9457), with a machine-readable
/// `type`, so clients can act on it without parsing prose.
public struct Problem: HTTPResponseError, Sendable {
    /// Per-field detail, for validation failures.
    public struct InvalidParameter: Codable, Sendable, Equatable {
        public var name: String
        public var reason: String

        public init(name: String, reason: String) {
            self.name = name
            self.reason = reason
        }
    }

    public var status: HTTPResponse.Status
    public var type: String
    public var title: String
    public var detail: String?
    public var invalidParameters: [InvalidParameter]
    /// Sent with the problem, such as `Retry-After`.
    public var headers: HTTPFields

    public init(
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

    public func response(from request: Request, context: some RequestContext) throws -> Response {
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
    public static func unauthorized(_ detail: String) -> Problem {
        Problem(status: .unauthorized, type: "unauthorized", title: "Missing or unknown API key", detail: detail)
    }

    /// Too many failed authentications from this client; `Retry-After` says when to try again.
    public static func tooManyAuthenticationFailures(retryAfter: Duration) -> Problem {
        let seconds = max(1, retryAfter.components.seconds + (retryAfter.components.attoseconds > 0 ? 1 : 0))
        return Problem(
            status: .tooManyRequests, type: "too-many-authentication-failures",
            title: "Too many failed authentications",
            detail: "this client sent too many missing or unknown API keys; try again in \(seconds) s",
            headers: [.retryAfter: String(seconds)])
    }

    public static func forbidden(_ detail: String) -> Problem {
        Problem(status: .forbidden, type: "forbidden", title: "Not allowed for this API key", detail: detail)
    }

    public static func notFound(_ detail: String) -> Problem {
        Problem(status: .notFound, type: "not-found", title: "Not found", detail: detail)
    }

    public static func invalid(_ detail: String, parameters: [InvalidParameter] = []) -> Problem {
        Problem(
            status: .badRequest, type: "invalid-request", title: "The request is invalid", detail: detail, invalidParameters: parameters)
    }
}
