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
            var allowed = Self.mostSpecific(methodsByPath.filter { Self.path($0.path, matches: segments) }).flatMap(\.methods)
            // The router answers HEAD wherever it answers GET.
            if allowed.contains(.get) { allowed.append(.head) }
            guard !allowed.isEmpty, !allowed.contains(request.method) else { throw error }
            let allow = Set(allowed.map(\.rawValue)).sorted().joined(separator: ", ")
            throw Problem(
                status: .methodNotAllowed, type: "method-not-allowed", title: "Method not allowed",
                detail: "\(request.uri.path) takes \(allow), not \(request.method.rawValue)", headers: [.allow: allow])
        }
    }

    /// The paths the router would pick among those matching: at the first segment where two
    /// differ, a literal segment wins over a parameter (`/v1/deliveries/replay` over
    /// `/v1/deliveries/:id`), and a parameter over a trailing wildcard.
    static func mostSpecific(
        _ candidates: [(path: RouterPath, methods: [HTTPRequest.Method])]
    ) -> [(path: RouterPath, methods: [HTTPRequest.Method])] {
        func specificity(_ path: RouterPath) -> [Int] {
            path.components.map { element in
                switch element.description {
                case "**": 0
                case let text where text.contains("{") || text.contains("*"): 1
                default: 2
                }
            }
        }
        guard let best = candidates.map({ specificity($0.path) }).max(by: { $0.lexicographicallyPrecedes($1) }) else {
            return []
        }
        return candidates.filter { specificity($0.path) == best }
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
