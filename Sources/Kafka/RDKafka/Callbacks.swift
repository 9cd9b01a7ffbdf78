import Crdkafka
import Foundation
import Logging

/// The object a handle's C callbacks reach through librdkafka's `opaque`.
protocol RDKafkaCallbackContext: AnyObject, Sendable {
    var logger: Logger { get }
    /// Whether librdkafka's warnings and errors are expected noise here
    /// (probing a broker that may be down) and belong at debug level.
    var quietLogs: Bool { get }
}

extension RDKafkaCallbackContext {
    var quietLogs: Bool { false }
}

/// A context that only routes logs, for short-lived admin handles.
final class LogContext: RDKafkaCallbackContext {
    let logger: Logger
    let quietLogs: Bool

    init(logger: Logger, quietLogs: Bool) {
        self.logger = logger
        self.quietLogs = quietLogs
    }
}

enum Callbacks {
    static func context(_ opaque: UnsafeMutableRawPointer?) -> (any RDKafkaCallbackContext)? {
        guard let opaque else { return nil }
        return Unmanaged<AnyObject>.fromOpaque(opaque).takeUnretainedValue() as? any RDKafkaCallbackContext
    }

    /// Installs the log callback; with `log.queue=true` it runs on whichever
    /// thread polls the handle's queue, never on librdkafka's internal threads.
    static func installLogging(_ conf: OpaquePointer) {
        rd_kafka_conf_set_log_cb(conf) { handle, level, facility, message in
            guard let handle, let context = Callbacks.context(rd_kafka_opaque(handle)) else { return }
            let level = context.quietLogs ? max(level, 7) : level
            context.logger.rdkafka(
                level: level, facility: facility.map { String(cString: $0) } ?? "",
                message: message.map { String(cString: $0) } ?? "")
        }
        rd_kafka_conf_set_error_cb(conf) { handle, code, reason, opaque in
            guard let context = Callbacks.context(opaque) else { return }
            let error = rd_kafka_resp_err_t(rawValue: code)
            let level: Logger.Level = context.quietLogs ? .debug : (error == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN ? .warning : .notice)
            context.logger.log(
                level: level, "librdkafka: \(String(cString: rd_kafka_err2name(error))): \(reason.map { String(cString: $0) } ?? "")",
                source: "librdkafka")
        }
    }
}

/// A dedicated thread for a client's poll loop, awaited like a function call.
enum PollThread {
    static func run(name: String, _ body: @escaping @Sendable () -> Void) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let thread = Thread {
                body()
                continuation.resume()
            }
            thread.name = name
            thread.start()
        }
    }
}
