import Foundation
import Hummingbird
import Logging
import Prometheus

/// `/health`, `/ready` and `/metrics`, served by every service.
package enum OperationsRoutes {
    package static func add<Context: RequestContext>(
        to router: Router<Context>, readiness: Readiness, registry: PrometheusCollectorRegistry
    ) {
        router.get("/health") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(string: #"{"status":"ok"}"#)))
        }
        router.get("/ready") { _, _ in
            let report = readiness.report
            let body = try JSONSerialization.data(
                withJSONObject: ["ready": readiness.isReady, "components": report, "serves": readiness.serves],
                options: [.sortedKeys])
            return Response(
                status: readiness.isReady ? .ok : .serviceUnavailable, headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(bytes: body)))
        }
        router.get("/metrics") { _, _ in
            var buffer: [UInt8] = []
            registry.emit(into: &buffer)
            return Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(bytes: buffer)))
        }
    }

    /// A server with only the operations routes, for services that have no other HTTP API.
    package static func server(
        host: String, port: Int, readiness: Readiness, registry: PrometheusCollectorRegistry, logger: Logger
    ) -> some ApplicationProtocol {
        let router = Router(options: .autoGenerateHeadEndpoints)
        router.middlewares.add(HeadRequestMiddleware())
        add(to: router, readiness: readiness, registry: registry)
        return Application(
            router: router, configuration: .init(address: .hostname(host, port: port), serverName: "checkin"),
            logger: logger)
    }
}
