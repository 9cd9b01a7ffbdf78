import Hummingbird
import ServiceSupport

/// Answers a request for a path the API has, with a method it does not take, 405 with
/// `Allow` naming the methods it does take, instead of the router's 404: `DELETE /v1/zones`
/// is a wrong method, not a missing resource.
///
/// Added after every route, so that it wraps only the router's not-found answer: a 404 of a
/// route's own (an endpoint that does not exist) passes through untouched.
struct MethodNotAllowedMiddleware<Context: RequestContext>: RouterMiddleware {
    /// Each route path with the methods it takes.
    let methodsByPath: [(path: RouterPath, methods: [HTTPRequest.Method])]

    init(routes: [Router<Context>.RouteDescription]) {
        var methodsByPath: [(path: RouterPath, methods: [HTTPRequest.Method])] = []
        for route in routes {
            if let index = methodsByPath.firstIndex(where: { $0.path == route.path }) {
                methodsByPath[index].methods.append(route.method)
            } else {
                methodsByPath.append((route.path, [route.method]))
            }
        }
        self.methodsByPath = methodsByPath
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound {
            let segments = request.uri.path.split(separator: "/", omittingEmptySubsequences: true)
            let allowed = methodsByPath.filter { Self.path($0.path, matches: segments) }.flatMap(\.methods)
            guard !allowed.isEmpty, !allowed.contains(request.method) else { throw error }
            let allow = Set(allowed.map(\.rawValue)).sorted().joined(separator: ", ")
            throw Problem(
                status: .methodNotAllowed, type: "method-not-allowed", title: "Method not allowed",
                detail: "\(request.uri.path) takes \(allow), not \(request.method.rawValue)", headers: [.allow: allow])
        }
    }

    static func path(_ path: RouterPath, matches segments: [Substring]) -> Bool {
        let elements = path.components
        if elements.last?.description == "**" {
            return segments.count >= elements.count - 1
                && zip(elements.dropLast(), segments).allSatisfy { element, segment in element ~= segment }
        }
        return elements.count == segments.count && zip(elements, segments).allSatisfy { element, segment in element ~= segment }
    }
}
