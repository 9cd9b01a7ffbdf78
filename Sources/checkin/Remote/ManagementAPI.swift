import AsyncHTTPClient
import CommandSupport
import Foundation
import NIOCore
import NIOHTTP1
import Notifier
import Shared

/// The management API of a remote deployment, as the command line calls it: one key (a
/// project's management key, or the operator key), typed calls per route (see
/// `ManagementAPI+Routes.swift`), and failures in words: a problem answer's title, detail and
/// the fields it names; an API that does not answer, its URL and why.
struct ManagementAPI: Sendable {
    var baseURL: String
    var key: String
    /// Where the key came from (`CHECKIN_API_KEY`, …), named when the API refuses it.
    var keySource: String

    /// Connecting may take this long: an address that does not answer fails within seconds.
    static let connectTimeout: TimeAmount = .seconds(5)
    /// Reading an answer may take this long (a large zones document is validated first).
    static let readTimeout: TimeAmount = .seconds(120)
    /// The most an answer may hold (a project's zones document, at its quota, is the largest).
    static let maximumAnswerBytes = 1 << 30

    /// One client for the process, as `HTTPClient.shared`, with a connect time-out of seconds
    /// rather than the shared client's minute and a half.
    /// Redirects are not followed: the key goes to CHECKIN_API_URL and nowhere else.
    static let client: HTTPClient = {
        var configuration = HTTPClient.Configuration.singletonConfiguration
        configuration.timeout = .init(connect: connectTimeout, read: readTimeout)
        configuration.redirectConfiguration = .disallow
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }()

    /// The project's management key, from the environment (or its file).
    init(settings: RemoteSettings, project: String) throws {
        baseURL = settings.baseURL
        key = try settings.managementKey(project: project)
        keySource = settings.managementKey != nil ? "CHECKIN_API_KEY" : "CHECKIN_API_KEY_FILE"
    }

    /// The operator key, for the operator routes.
    init(operatorOf settings: RemoteSettings) throws {
        baseURL = settings.baseURL
        key = try settings.requireOperatorKey()
        keySource = "CHECKIN_OPERATOR_KEY"
    }

    init(baseURL: String, key: String, keySource: String) {
        self.baseURL = baseURL
        self.key = key
        self.keySource = keySource
    }

    /// An answer that is not an error: its headers and body.
    struct Answer: Sendable {
        var status: Int
        var headers: HTTPHeaders
        var body: Data

        /// The body as `type`, read as the API writes it (RFC 3339 times).
        func decode<Value: Decodable>(_ type: Value.Type, from url: String) throws -> Value {
            do {
                return try WireJSON.decoder().decode(type, from: body)
            } catch {
                throw CommandFailure("the answer of \(url) is not what this checkin reads: \(DecodingErrorText.describe(error))")
            }
        }
    }

    /// Sends a request and answers its 2xx answer; any other is thrown as an ``APIProblem``,
    /// and an API that cannot be reached as a failure naming its URL and why.
    func send(
        _ method: HTTPMethod, _ path: String, query: [(String, String?)] = [], body: Data? = nil, headers: [(String, String)] = []
    ) async throws -> Answer {
        let url = baseURL + path + Self.queryString(query)
        var request = HTTPClientRequest(url: url)
        request.method = method
        request.headers.add(name: "Authorization", value: "Bearer \(key)")
        request.headers.add(name: "Accept", value: "application/json, application/problem+json")
        request.headers.add(name: "User-Agent", value: "checkin/\(Checkin.versionDescription)")
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: body))
        }
        let response: HTTPClientResponse
        let bytes: ByteBuffer
        do {
            response = try await Self.client.execute(request, timeout: Self.readTimeout + Self.connectTimeout)
            bytes = try await response.body.collect(upTo: Self.maximumAnswerBytes)
        } catch {
            throw CommandFailure("cannot reach the API at \(baseURL) (CHECKIN_API_URL): \(NetworkErrorText.describe(error))")
        }
        let status = Int(response.status.code)
        let data = Data(buffer: bytes)
        guard (200..<300).contains(status) else {
            throw APIProblem(
                status: status, reason: response.status.reasonPhrase, method: method.rawValue, url: url, body: data,
                keySource: keySource)
        }
        return Answer(status: status, headers: response.headers, body: data)
    }

    /// A GET whose answer is `Value`.
    func get<Value: Decodable>(_ type: Value.Type, _ path: String, query: [(String, String?)] = []) async throws -> Value {
        try await send(.GET, path, query: query).decode(type, from: baseURL + path)
    }

    /// A request with a JSON body whose answer is `Value`.
    func send<Value: Decodable>(
        _ type: Value.Type, _ method: HTTPMethod, _ path: String, json body: some Encodable, headers: [(String, String)] = []
    ) async throws -> Value {
        try await send(method, path, body: try WireJSON.encoder().encode(body), headers: headers).decode(type, from: baseURL + path)
    }

    /// A path segment (an id) percent-encoded, so that `bus 7` or `a/b` names one thing.
    static func segment(_ text: String) -> String {
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "/;?#%")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }

    static func queryString(_ query: [(String, String?)]) -> String {
        var allowed = CharacterSet.urlQueryAllowed
        allowed.remove(charactersIn: "&=+;#%")
        let pairs = query.compactMap { name, value in
            value.map { "\(name)=\($0.addingPercentEncoding(withAllowedCharacters: allowed) ?? $0)" }
        }
        return pairs.isEmpty ? "" : "?" + pairs.joined(separator: "&")
    }
}

/// An error the API answered: printed as its problem's title and detail, each field it names
/// on a line of its own, and the request it answered.
struct APIProblem: Error, CustomStringConvertible {
    struct Body: Decodable {
        struct Parameter: Decodable {
            var name: String
            var reason: String
        }

        var type: String?
        var title: String?
        var detail: String?
        var invalidParameters: [Parameter]?

        enum CodingKeys: String, CodingKey {
            case type, title, detail
            case invalidParameters = "invalid-params"
        }
    }

    var status: Int
    var method: String
    var url: String
    var title: String
    var detail: String?
    /// The problem's `type`, without its `urn:checkin:problem:` prefix.
    var type: String?
    var invalidParameters: [(name: String, reason: String)]
    var keySource: String

    init(status: Int, reason: String, method: String, url: String, body: Data, keySource: String) {
        self.status = status
        self.method = method
        self.url = url
        self.keySource = keySource
        if let problem = try? JSONDecoder().decode(Body.self, from: body), problem.title != nil || problem.detail != nil {
            title = problem.title ?? reason
            detail = problem.detail
            type = problem.type.map { $0.replacingOccurrences(of: "urn:checkin:problem:", with: "") }
            invalidParameters = (problem.invalidParameters ?? []).map { ($0.name, $0.reason) }
        } else {
            // Not the API's answer (a proxy's page, say): its status, and the start of what it said.
            title = reason
            let text = String(decoding: body.prefix(300), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            detail = text.isEmpty ? nil : text
            type = nil
            invalidParameters = []
        }
    }

    var description: String {
        var lines = [title + (detail.map { ": \($0)" } ?? "")]
        lines += invalidParameters.map { "  \($0.name): \($0.reason)" }
        lines.append("(HTTP \(status) from \(method) \(url))")
        if status == 401 { lines.append("(the key is \(keySource)'s)") }
        return lines.joined(separator: "\n")
    }
}
