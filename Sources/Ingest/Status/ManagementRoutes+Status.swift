import Foundation
import Hummingbird
import ServiceSupport
import Shared

extension ManagementRoutes {
    /// `GET /v1/status` (the operator key): `checkin status` of a remote deployment, read by
    /// the ingest that answers, which reaches the broker, Postgres and the services it is told of.
    func addStatusRoute(to router: Router<IngestRequestContext>) {
        router.get("/v1/status") { request, context in
            try keys.requireOperator(request, context: context)
            try Self.refuseUnknownParameters(of: request, known: ["maxLag", "maxFixAge", "timeout"])
            guard let source = dependencies.status else {
                throw Problem(
                    status: .notFound, type: "status-off", title: "This ingest does not read the pipeline's status",
                    detail: "it runs without the pipeline's settings; ask an ingest started by checkin ingest or checkin dev")
            }
            let limits = try Self.statusLimits(of: request)
            let readiness = dependencies.readiness
            let own = PipelineStatus.ServiceReadiness(
                url: "this ingest", ready: readiness.isReady, components: readiness.report, serves: readiness.serves)
            return try json(await source.status(limits: limits, own: own))
        }
    }

    static func statusLimits(of request: Request) throws -> PipelineStatusLimits {
        var limits = PipelineStatusLimits.defaults
        let query = request.uri.queryParameters
        if let text = query.get("maxLag") {
            guard let value = Int64(text), value >= 0 else {
                throw Problem.invalid(
                    "maxLag out of range", parameters: [.init(name: "maxLag", reason: "must be a whole number of records, 0 or more")])
            }
            limits.maximumLag = value
        }
        if let text = query.get("maxFixAge") {
            guard let value = Double(text), value.isFinite, value >= 0 else {
                throw Problem.invalid(
                    "maxFixAge out of range", parameters: [.init(name: "maxFixAge", reason: "must be a number of seconds, 0 or more")])
            }
            limits.maximumFixAge = value
        }
        if let text = query.get("timeout") {
            guard let value = Int(text), (1...30).contains(value) else {
                throw Problem.invalid(
                    "timeout out of range", parameters: [.init(name: "timeout", reason: "must be a whole number of seconds from 1 to 30")])
            }
            limits.timeout = .seconds(value)
        }
        return limits
    }
}
