import Foundation
import Hummingbird
import HummingbirdTesting
import Ingest
import Kafka
import Logging
import Persistence
import ServiceSupport
import Testing

/// The ingest service serves the repository's openapi.yaml as it is, so the contract
/// clients read from a running service is the one reviewed in the repository.
@Suite struct OpenAPIDocumentTests {
    static let repositoryDocument = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("openapi.yaml")

    static let logger = Logger(label: "test.openapi")

    /// The ingest service's dependencies, none of which connects: the routes tested here
    /// need neither the broker nor Postgres.
    static func unconnectedDependencies() throws -> IngestDependencies {
        let database = Database(configuration: try DatabaseConfiguration(url: "postgres://unused@127.0.0.1:1/unused"), logger: logger)
        let producer = try KafkaProducer(
            configuration: KafkaProducerConfiguration(bootstrapServers: "127.0.0.1:1", clientId: "test"), logger: logger)
        return IngestDependencies(
            producer: producer, projects: ProjectStore(database: database, logger: logger),
            zones: ZoneStore(database: database, logger: logger),
            webhooks: WebhookStore(database: database, logger: logger, sealer: PipelineHarness().sealer),
            devices: DeviceRecords(database: database, logger: logger),
            idempotency: IdempotencyStore(database: database, logger: logger, sealer: PipelineHarness().sealer), readiness: Readiness(),
            registry: MetricsBootstrap.prometheus())
    }

    @Test func ingestServesTheRepositoryDocument() async throws {
        let expected = try String(contentsOf: Self.repositoryDocument, encoding: .utf8)
        let app = buildIngestApplication(
            configuration: IngestConfiguration(port: 0), dependencies: try Self.unconnectedDependencies(), logger: Self.logger)
        try await app.test(.router) { client in
            try await client.execute(uri: "/openapi.yaml", method: .get) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentType]?.hasPrefix("application/yaml") == true)
                let served = String(buffer: response.body)
                let same = served == expected
                #expect(same, "the served document is not openapi.yaml")
            }
            // Its references to the JSON Schemas resolve against the service, to the repository's files.
            let schemas = Self.repositoryDocument.deletingLastPathComponent().appendingPathComponent("schemas")
            for name in ["fix.schema.json", "event.schema.json"] {
                #expect(expected.contains("schemas/\(name)"), "openapi.yaml no longer refers to \(name)")
                let file = try String(contentsOf: schemas.appendingPathComponent(name), encoding: .utf8)
                try await client.execute(uri: "/schemas/\(name)", method: .get) { response in
                    #expect(response.status == .ok)
                    let same = String(buffer: response.body) == file
                    #expect(same, "the served \(name) is not the repository's")
                }
            }
            // The names the document gives `/schemas/{name}` (in order) are the schemas the service has.
            let named = "schema: {enum: [\(OpenAPIDocument.schemas.keys.sorted().joined(separator: ", "))]}"
            #expect(expected.contains("- {name: name, in: path, required: true, \(named)}"), "/schemas/{name} does not name \(named)")
            try await client.execute(uri: "/schemas/nosuch.json", method: .get) { response in
                #expect(response.status == .notFound)
            }
        }
    }

    /// The API's routes and the service's own are described, with 401 wherever a key is asked for.
    @Test func documentDescribesEveryRouteAndItsAuthentication() throws {
        let document = try String(contentsOf: Self.repositoryDocument, encoding: .utf8)
        for path in [
            "/v1/fixes:", "/v1/zones:", "/v1/zones/versions:", "/v1/zones/versions/{version}:",
            "/v1/zones/versions/{version}/restore:", "/v1/webhooks:", "/v1/webhooks/{id}:", "/v1/deliveries:",
            "/v1/deliveries/{id}/replay:", "/v1/devices/{deviceId}:", "/v1/devices/{deviceId}/decisions:", "/v1/events:",
            "/console:", "/health:", "/ready:", "/metrics:", "/openapi.yaml:",
        ] {
            #expect(document.contains("\n  \(path)\n"), "openapi.yaml does not describe \(path)")
        }
        #expect(document.contains("name: X-API-Key"), "the X-API-Key scheme the ingest accepts is not described")
        let secured = operations(in: document).filter { $0.contains("security: [") }
        #expect(secured.count >= 8)
        for operation in secured {
            #expect(operation.contains("\"401\""), "an operation that needs a key does not list 401: \(operation.prefix(80))")
        }
    }

    /// Every route the ingest router registers, read from the router itself, is in the
    /// document with its method: a route added without its description fails here.
    @Test func documentDescribesEveryRegisteredRouteAndMethod() throws {
        let document = try String(contentsOf: Self.repositoryDocument, encoding: .utf8)
        let (router, _) = buildIngestRouter(
            configuration: IngestConfiguration(port: 0), dependencies: try Self.unconnectedDependencies(), logger: Self.logger)
        // HEAD is answered for every GET (autoGenerateHeadEndpoints) and described with it.
        let routes = router.routes.filter { $0.method != .head }
        #expect(routes.count >= 30, "the router lists only \(routes.count) routes")
        for route in routes {
            let path = route.path.description
            guard let block = pathBlock(path, in: document) else {
                Issue.record("openapi.yaml does not describe \(path)")
                continue
            }
            let method = route.method.rawValue.lowercased()
            #expect(block.contains("\n    \(method):"), "openapi.yaml does not describe \(route.method.rawValue) \(path)")
        }
    }

    /// The text of one path of the document (`  /path:` … up to the next line indented 2 or less).
    func pathBlock(_ path: String, in document: String) -> String? {
        guard let start = document.range(of: "\n  \(path):\n") else { return nil }
        let rest = document[start.upperBound...]
        let end = rest.range(of: #"\n {0,2}[^ \n]"#, options: .regularExpression)?.lowerBound ?? rest.endIndex
        return "\n" + rest[..<end]
    }

    /// The text of each operation (`    get:` … up to the next line indented 4 or less).
    func operations(in document: String) -> [String] {
        var result: [String] = []
        var current: String?
        for line in document.split(separator: "\n", omittingEmptySubsequences: false) {
            let indentation = line.prefix { $0 == " " }.count
            if indentation == 4, ["get:", "put:", "post:", "delete:"].contains(where: { line.hasPrefix("    " + $0) }) {
                if let current { result.append(current) }
                current = String(line)
            } else if indentation <= 4 && !line.isEmpty {
                if let current { result.append(current) }
                current = nil
            } else if current != nil {
                current! += "\n" + line
            }
        }
        if let current { result.append(current) }
        return result
    }
}
