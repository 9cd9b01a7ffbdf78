import Hummingbird
import ServiceSupport

/// The OpenAPI document of this service, served at `GET /openapi.yaml` so that clients
/// and tools read the contract from the running service itself, and the JSON Schemas it
/// refers to (`schemas/fix.schema.json`, …) at `GET /schemas/NAME`, where its relative
/// references lead. The texts are embedded at build time (see `scripts/embed-openapi.sh`):
/// the binary needs no file beside it.
public enum OpenAPIDocument {
    public static func add<Context: RequestContext>(to router: Router<Context>) {
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
