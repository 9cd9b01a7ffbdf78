import NIOCore
import NIOPosix

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Turns a webhook's host name into the addresses to connect to. The notifier checks
/// every address it gets and connects only to those, so a name cannot be re-pointed
/// (DNS rebinding) between the check and the connection. Tests inject their own.
package protocol WebhookHostResolver: Sendable {
    func addresses(of host: String, port: Int) async throws -> [SocketAddress]
}

package struct HostResolutionError: Error, CustomStringConvertible {
    package var host: String
    package var reason: String
    package init(host: String, reason: String) {
        self.host = host
        self.reason = reason
    }
    package var description: String { "cannot resolve \(host): \(reason)" }
}

/// The system resolver (`getaddrinfo`, so /etc/hosts and the configured DNS), run on
/// NIO's blocking-IO thread pool, never on the cooperative pool.
package struct SystemHostResolver: WebhookHostResolver {
    package init() {}

    package func addresses(of host: String, port: Int) async throws -> [SocketAddress] {
        try await NIOThreadPool.singleton.runIfActive { try Self.lookup(host: host, port: port) }
    }

    static func lookup(host: String, port: Int) throws -> [SocketAddress] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if canImport(Glibc)
            hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
            hints.ai_socktype = SOCK_STREAM
        #endif
        hints.ai_protocol = Int32(IPPROTO_TCP)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0 else { throw HostResolutionError(host: host, reason: String(cString: gai_strerror(status))) }
        defer { freeaddrinfo(list) }
        var addresses: [SocketAddress] = []
        var cursor = list
        while let entry = cursor?.pointee {
            if let pointer = entry.ai_addr {
                switch entry.ai_family {
                case AF_INET:
                    let address = pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee }
                    addresses.append(SocketAddress(address, host: host))
                case AF_INET6:
                    let address = pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee }
                    addresses.append(SocketAddress(address, host: host))
                default:
                    break
                }
            }
            cursor = entry.ai_next
        }
        guard !addresses.isEmpty else { throw HostResolutionError(host: host, reason: "no IPv4 or IPv6 address") }
        return addresses
    }
}
