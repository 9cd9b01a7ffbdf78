import Hummingbird
import NIOCore

/// The request context of the Ingest API: Hummingbird's basic one plus the client's
/// address, which failed authentications are counted by.
package struct IngestRequestContext: RequestContext, RemoteAddressRequestContext {
    package var coreContext: CoreRequestContextStorage
    /// Nil when there is no socket (the in-process test client).
    package let remoteAddress: SocketAddress?

    package init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.remoteAddress = source.channel.remoteAddress
    }
}
