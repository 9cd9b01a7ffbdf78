import Hummingbird
import NIOCore

/// The request context of the Ingest API: Hummingbird's basic one plus the client's
/// address, which failed authentications are counted by.
public struct IngestRequestContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    /// Nil when there is no socket (the in-process test client).
    public let remoteAddress: SocketAddress?

    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.remoteAddress = source.channel.remoteAddress
    }
}
