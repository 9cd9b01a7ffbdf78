import Hummingbird

/// The OpenAPI document of this service, served at `GET /openapi.yaml` so that clients
/// and tools read the contract from the running service itself. The text is embedded
/// at build time (see `scripts/embed-openapi.sh`): the binary needs no file beside it.
public enum OpenAPIDocument {
    public static func add<Context: RequestContext>(to router: Router<Context>) {
        router.get("/openapi.yaml") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "application/yaml; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(string: yaml)))
        }
    }
}
