import Hummingbird
import ServiceSupport

/// The OpenAPI document of this service, served at `GET /openapi.yaml` so that clients
/// and tools read the contract from the running service itself, and the JSON Schemas it
/// refers to (`schemas/fix.schema.json`, …) at `GET /schemas/NAME`, where its relative
/// references lead. The files (`Contract/`) are compiled into the binary as resources: it
/// needs no file beside it.
package enum OpenAPIDocument {
    /// The text of the repository's openapi.yaml.
    package static let yaml = String(decoding: PackageResources.openapi_yaml, as: UTF8.self)

    /// The JSON Schemas the document refers to, by file name (schemas/NAME).
    package static let schemas: [String: String] = [
        "fix.schema.json": String(decoding: PackageResources.fix_schema_json, as: UTF8.self),
        "event.schema.json": String(decoding: PackageResources.event_schema_json, as: UTF8.self),
    ]

    package static func add<Context: RequestContext>(to router: Router<Context>) {
        router.get("/openapi.yaml") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "application/yaml; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(string: yaml)))
        }
        router.get("/schemas/:name") { _, context in
            let name = try context.parameters.decoded("name")
            guard let schema = schemas[name] else { throw Problem.notFound("no schema \(name)") }
            return Response(
                status: .ok, headers: [.contentType: "application/schema+json"],
                body: .init(byteBuffer: ByteBuffer(string: schema)))
        }
    }
}
