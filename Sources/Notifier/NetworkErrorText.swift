import AsyncHTTPClient
import NIOCore
import NIOPosix

/// What went wrong on the network, in words an operator reads: "connection refused",
/// not `connection reset (error set): Connection refused) (errno: 111)`.
package enum NetworkErrorText {
    package static func describe(_ error: any Error) -> String {
        switch error {
        case let error as IOError:
            return describe(errno: error.errnoCode)
        case let error as NIOConnectionError:
            // Every address tried failed: the first connect error says why.
            if let first = error.connectionErrors.first { return describe(first.error) }
            if let dns = error.dnsAAAAError ?? error.dnsAError { return "could not resolve \(error.host): \(dns)" }
            return "could not connect to \(error.host):\(error.port)"
        case let error as HTTPClientError:
            switch error {
            case .connectTimeout: return "connection timed out"
            case .readTimeout, .deadlineExceeded: return "no answer within the time-out"
            case .remoteConnectionClosed: return "the server closed the connection"
            default: return String(describing: error)
            }
        default:
            return String(describing: error)
        }
    }

    static func describe(errno code: Int32) -> String {
        switch code {
        case ECONNREFUSED: return "connection refused"
        case ECONNRESET: return "connection reset"
        case ETIMEDOUT: return "connection timed out"
        case EHOSTUNREACH: return "host unreachable"
        case ENETUNREACH: return "network unreachable"
        default: return String(cString: strerror(code)).lowercased()
        }
    }
}
