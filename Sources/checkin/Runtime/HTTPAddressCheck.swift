import CommandSupport
import Foundation
import NIOCore
import NIOPosix

/// The HTTP address a process is to listen on, checked before any service starts: a port in
/// use would otherwise show as a bind error after the pipeline had started, and the cascade of
/// warnings of its other services stopping again, none naming the setting to change.
struct HTTPAddressCheck {
    var host: String
    var port: Int

    /// Binds the address and lets it go at once; port 0 (any free port) needs no check.
    func ensureFree() async throws {
        guard port != 0 else { return }
        let settings = "CHECKIN_HTTP_HOST:CHECKIN_HTTP_PORT"
        do {
            let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .bind(host: host, port: port).get()
            try await channel.close()
        } catch let error as IOError where error.errnoCode == EADDRINUSE {
            throw CommandFailure(
                "\(host):\(port) (\(settings)) is in use by another process: stop it, or set CHECKIN_HTTP_PORT to a free port")
        } catch let error as IOError where error.errnoCode == EADDRNOTAVAIL {
            throw CommandFailure("\(host) (CHECKIN_HTTP_HOST) is not an address of this machine")
        } catch {
            throw CommandFailure("cannot listen on \(host):\(port) (\(settings)): \(error)")
        }
    }
}
