import Dispatch
import Foundation
import Hummingbird
import Kafka
import Logging
import Metrics
import Persistence
import Prometheus
import ServiceSupport
import Shared

/// What the HTTP API needs from the rest of the process.
package struct IngestDependencies: Sendable {
    package var producer: KafkaProducer
    package var projects: ProjectStore
    package var zones: ZoneStore
    package var webhooks: WebhookStore
    /// Answers to requests sent with an `Idempotency-Key`.
    package var idempotency: IdempotencyStore
    /// Device views and decision records.
    package var insight: DeviceInsight
    package var readiness: Readiness
    package var registry: PrometheusCollectorRegistry
    /// What `GET /v1/status` reads; nil: that route answers 404.
    package var status: (any PipelineStatusSource)?
    /// The database the stores share.
    var database: Database { insight.records.database }

    package init(
        producer: KafkaProducer, projects: ProjectStore, zones: ZoneStore, webhooks: WebhookStore, devices: DeviceRecords,
        idempotency: IdempotencyStore, readiness: Readiness, registry: PrometheusCollectorRegistry,
        status: (any PipelineStatusSource)? = nil
    ) {
        self.producer = producer
        self.projects = projects
        self.zones = zones
        self.webhooks = webhooks
        self.idempotency = idempotency
        self.insight = DeviceInsight(records: devices, zones: zones)
        self.readiness = readiness
        self.registry = registry
        self.status = status
    }
}

/// Builds the Ingest HTTP application: fixes in, management API, operations routes.
/// Tests build the same application.
package func buildIngestApplication(
    configuration: IngestConfiguration, dependencies: IngestDependencies, logger: Logger,
    onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
) -> some ApplicationProtocol {
    let (router, usage) = buildIngestRouter(configuration: configuration, dependencies: dependencies, logger: logger)
    return Application(
        router: router,
        configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "checkin-ingest"),
        services: [
            usage,
            RetentionService(name: "idempotency keys", metric: "checkin_ingest_idempotency_keys_purged_total", logger: logger) {
                [idempotency = dependencies.idempotency] now in
                try await idempotency.purge(before: now - Double(IdempotencyStore.retention.components.seconds))
            },
        ],
        onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? configuration.port) },
        logger: logger)
}

/// The Ingest service's routes and middleware, and the recorder of its keys' use (a service
/// the application runs). On its own so that the routes it registers can be listed.
package func buildIngestRouter(configuration: IngestConfiguration, dependencies: IngestDependencies, logger: Logger)
    -> (router: Router<IngestRequestContext>, keyUsage: KeyUsageRecorder)
{
    let router = Router(context: IngestRequestContext.self, options: .autoGenerateHeadEndpoints)
    router.middlewares.add(HeadRequestMiddleware())
    router.middlewares.add(ProblemMiddleware(logger: logger, maximumBodyBytes: configuration.maximumBodyBytes))
    OperationsRoutes.add(to: router, readiness: dependencies.readiness, registry: dependencies.registry)
    OpenAPIDocument.add(to: router)
    ConsolePage.add(to: router, tiles: configuration.consoleTiles)
    let usage = KeyUsageRecorder(projects: dependencies.projects, interval: configuration.keyUsageInterval, logger: logger)
    let keys = APIKeyResolver(
        projects: dependencies.projects, timeToLive: configuration.apiKeyCacheTimeToLive,
        failuresPerMinute: configuration.authFailuresPerMinute, operatorKey: configuration.operatorKey, usage: usage)
    FixRoutes(configuration: configuration, producer: dependencies.producer, keys: keys, logger: logger).add(to: router)
    ManagementRoutes(configuration: configuration, dependencies: dependencies, keys: keys, logger: logger).add(to: router)
    router.middlewares.add(MethodNotAllowedMiddleware(routes: router.routes))
    return (router, usage)
}

/// `POST /v1/fixes`: validates a batch and answers 202 only once the broker has
/// acknowledged every fix of it.
struct FixRoutes {
    let configuration: IngestConfiguration
    let producer: KafkaProducer
    let keys: APIKeyResolver
    let logger: Logger

    let acceptedFixes = Counter(label: "checkin_ingest_fixes_accepted_total")
    let rejectedBatches = Counter(label: "checkin_ingest_batches_rejected_total")
    let publishLatency = Metrics.Timer(label: "checkin_ingest_publish_seconds")

    func add(to router: Router<IngestRequestContext>) {
        router.post("/v1/fixes") { request, context in
            try await accept(request, context: context)
        }
    }

    func accept(_ request: Request, context: IngestRequestContext) async throws -> Response {
        let receivedAt = Date()
        let projectId: String? =
            try configuration.requireAPIKey || APIKeyResolver.key(in: request) != nil
            ? try await keys.project(for: request, context: context, kind: .device) : nil
        let body = try await request.body.collect(upTo: configuration.maximumBodyBytes)
        let fixes: [Fix]
        do {
            fixes = try FixBatchDecoder(maximumBatchSize: configuration.maximumBatchSize, limits: configuration.limits)
                .decode(Data(buffer: body), projectId: projectId, receivedAt: receivedAt)
        } catch {
            rejectedBatches.increment()
            throw error
        }
        let records = try fixes.map { fix in
            KafkaRecord(topic: configuration.topics.fixes, key: Array(fix.deviceId.utf8), value: try fix.wireJSON())
        }
        let started = DispatchTime.now()
        let results = await producer.send(records)
        publishLatency.recordInterval(since: started)
        let failures = results.compactMap { result -> KafkaError? in
            if case .failure(let error) = result { return error }
            return nil
        }
        guard failures.isEmpty else {
            logger.error("fixes not acknowledged by the broker", metadata: ["failed": "\(failures.count)", "error": "\(failures[0])"])
            throw Problem(
                status: .serviceUnavailable, type: "broker-unavailable", title: "Fixes could not be stored",
                detail:
                    "\(failures.count) of \(fixes.count) fixes were not acknowledged by the broker; resend the batch (fixIds make resends harmless)"
            )
        }
        acceptedFixes.increment(by: fixes.count)
        return Response(
            status: .accepted, headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(string: #"{"accepted":\#(fixes.count)}"#)))
    }
}

/// Turns any error that is not already a problem into a problem, so every error
/// body is `application/problem+json`: a body over the limit is a 413, other HTTP
/// errors keep their status, and anything else is a 500.
struct ProblemMiddleware<Context: RequestContext>: RouterMiddleware {
    let logger: Logger
    var maximumBodyBytes = InputLimits.maximumRequestBodyBytes

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let problem as Problem {
            throw problem
        } catch let error as any HTTPResponseError where error.status == .contentTooLarge {
            // Among others NIO's "too many bytes", thrown when a body is collected beyond its limit.
            throw Problem(
                status: .contentTooLarge, type: "body-too-large", title: "The request body is too large",
                detail: "a request body holds at most \(maximumBodyBytes) bytes")
        } catch let error as HTTPError {
            throw Problem(status: error.status, type: "http-\(error.status.code)", title: error.status.reasonPhrase, detail: error.body)
        } catch let error as any HTTPResponseError where error.status.code < 500 {
            throw Problem(status: error.status, type: "http-\(error.status.code)", title: error.status.reasonPhrase)
        } catch {
            logger.error("request failed", metadata: ["path": "\(request.uri.path)", "error": "\(error)"])
            throw Problem(status: .internalServerError, type: "internal", title: "Internal error", detail: nil)
        }
    }
}
