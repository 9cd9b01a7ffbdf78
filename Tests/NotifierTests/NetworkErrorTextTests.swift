import AsyncHTTPClient
import Foundation
import NIOCore
import Testing

@testable import Notifier

#if canImport(Glibc)
    import Glibc
#endif

/// Delivery errors and `checkin status` say what happened on the network in plain words.
@Suite struct NetworkErrorTextTests {
    @Test func socketErrorsAreNamedByTheirErrno() {
        #expect(NetworkErrorText.describe(IOError(errnoCode: ECONNREFUSED, reason: "connection reset (error set)")) == "connection refused")
        #expect(NetworkErrorText.describe(IOError(errnoCode: ECONNRESET, reason: "read")) == "connection reset")
        #expect(NetworkErrorText.describe(HTTPClientError.connectTimeout) == "connection timed out")
        #expect(NetworkErrorText.describe(HTTPClientError.deadlineExceeded) == "no answer within the time-out")
        struct Other: Error, CustomStringConvertible { var description: String { "something else" } }
        #expect(NetworkErrorText.describe(Other()) == "something else")
    }

    /// A webhook sent to a port where nothing listens: the attempt's error reads "connection refused".
    @Test func aSendToAClosedPortSaysConnectionRefused() async throws {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, length) } }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) } }
        // Bound and closed without listening: the port is free and refuses connections.
        close(socket)
        let port = Int(UInt16(bigEndian: address.sin_port))
        let client = try GuardedWebhookClient(policy: .local)
        let sender = WebhookSender(configuration: NotifierConfiguration(), client: client)
        let response = await sender.send(WebhookRequest(url: "http://127.0.0.1:\(port)/hooks", headers: [:], body: []))
        #expect(response.error == "connection refused")
        client.shutdown()
    }
}
