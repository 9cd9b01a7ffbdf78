import Foundation
import HTTPTypes
import Hummingbird
import NIOConcurrencyHelpers
import Persistence
import ServiceSupport

/// Maps an API key to its project, caching answers briefly so that the hot path
/// does not query Postgres on every request.
public final class APIKeyResolver: Sendable {
    struct CachedAnswer {
        var projectId: String?
        var expires: ContinuousClock.Instant
    }

    let projects: ProjectStore
    let timeToLive: Duration
    private let cache = NIOLockedValueBox<[String: CachedAnswer]>([:])

    public init(projects: ProjectStore, timeToLive: Duration = .seconds(30)) {
        self.projects = projects
        self.timeToLive = timeToLive
    }

    /// The key from `Authorization: Bearer …` or `X-API-Key`.
    static func key(in request: Request) -> String? {
        if let authorization = request.headers[.authorization], authorization.lowercased().hasPrefix("bearer ") {
            return String(authorization.dropFirst(7)).trimmingCharacters(in: .whitespaces)
        }
        if let name = HTTPField.Name("X-API-Key"), let key = request.headers[name] { return key }
        return nil
    }

    /// The project of the request's key of this kind, or a 401 problem.
    func project(for request: Request, kind: ProjectStore.KeyKind) async throws -> String {
        guard let key = Self.key(in: request), !key.isEmpty else {
            throw Problem.unauthorized("send the \(kind.rawValue) API key as 'Authorization: Bearer <key>'")
        }
        let cacheKey = kind.rawValue + ":" + key
        let now = ContinuousClock.now
        if let cached = cache.withLockedValue({ $0[cacheKey] }), cached.expires > now {
            guard let projectId = cached.projectId else {
                throw Problem.unauthorized("the API key is not a \(kind.rawValue) key of any project")
            }
            return projectId
        }
        let projectId = try await projects.project(forKey: key, kind: kind)
        cache.withLockedValue { cache in
            if cache.count > 10_000 { cache.removeAll() }
            cache[cacheKey] = CachedAnswer(projectId: projectId, expires: now + timeToLive)
        }
        guard let projectId else { throw Problem.unauthorized("the API key is not a \(kind.rawValue) key of any project") }
        return projectId
    }
}
