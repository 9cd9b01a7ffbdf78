import Hummingbird

/// Answers HEAD as GET would, without the body (RFC 9110: a server that takes GET takes
/// HEAD). The routers generate a HEAD route for each GET route; this middleware, added
/// before every other, strips the body of whatever else answers a HEAD (a refusal's problem
/// details, a 404, a 405), so that no body bytes follow a HEAD answer on a kept-alive
/// connection, where the client would read them as the next answer.
package struct HeadRequestMiddleware<Context: RequestContext>: RouterMiddleware {
    package init() {}

    package func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard request.method == .head else { return try await next(request, context) }
        do {
            return try await next(request, context).createHeadResponse()
        } catch let error as any HTTPResponseError {
            return try error.response(from: request, context: context).createHeadResponse()
        }
    }
}
