import Crdkafka
import Dispatch
import Logging

/// Owns one `rd_kafka_t` and destroys it when the last reference goes, so a
/// blocking call still running on another thread never sees a freed handle.
/// Everything C stays in this folder.
final class RDKafkaClient: @unchecked Sendable {
    /// `@unchecked`: librdkafka handles are thread-safe; the pointers never change.
    let handle: OpaquePointer
    let logger: Logger
    /// Retained for the handle's callbacks (its `opaque`), released after the handle is destroyed.
    private let callbackContext: Unmanaged<AnyObject>?

    private init(handle: OpaquePointer, logger: Logger, callbackContext: Unmanaged<AnyObject>?) {
        self.handle = handle
        self.logger = logger
        self.callbackContext = callbackContext
    }

    deinit {
        rd_kafka_destroy(handle)
        callbackContext?.release()
    }

    /// Creates a handle from string properties; `configure` may install callbacks
    /// on the `rd_kafka_conf_t` before librdkafka takes it over.
    static func make(
        type: rd_kafka_type_t, properties: [String: String], callbackContext: (any RDKafkaCallbackContext)? = nil, logger: Logger,
        configure: (OpaquePointer) -> Void = { _ in }
    ) throws(KafkaError) -> RDKafkaClient {
        guard let conf = rd_kafka_conf_new() else { throw KafkaError(message: "could not allocate a configuration") }
        var errorText = [CChar](repeating: 0, count: 512)
        for (name, value) in properties.sorted(by: { $0.key < $1.key }) {
            let result = rd_kafka_conf_set(conf, name, value, &errorText, errorText.count)
            if result != RD_KAFKA_CONF_OK {
                rd_kafka_conf_destroy(conf)
                throw KafkaError(
                    message: "invalid librdkafka property \(name)=\(value)",
                    reason: string(errorText))
            }
        }
        let unmanaged = callbackContext.map { Unmanaged<AnyObject>.passRetained($0 as AnyObject) }
        if let unmanaged { rd_kafka_conf_set_opaque(conf, unmanaged.toOpaque()) }
        configure(conf)
        // On success rd_kafka_new owns conf; on failure it stays ours.
        guard let handle = rd_kafka_new(type, conf, &errorText, errorText.count) else {
            rd_kafka_conf_destroy(conf)
            unmanaged?.release()
            throw KafkaError(
                message: "could not create the Kafka client",
                reason: string(errorText))
        }
        return RDKafkaClient(handle: handle, logger: logger, callbackContext: unmanaged)
    }

    /// The text librdkafka wrote into an error buffer.
    static func string(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The error librdkafka declared fatal for this handle, if any.
    func fatalError() -> KafkaError? {
        Self.fatalError(of: handle)
    }

    static func fatalError(of handle: OpaquePointer) -> KafkaError? {
        var text = [CChar](repeating: 0, count: 512)
        let code = rd_kafka_fatal_error(handle, &text, text.count)
        guard code != RD_KAFKA_RESP_ERR_NO_ERROR else { return nil }
        return KafkaError("fatal client error", code: code, reason: RDKafkaClient.string(text), isFatal: true)
    }
}

extension Logger {
    /// Logs one librdkafka log line at the swift-log level matching its syslog level.
    func rdkafka(level: Int32, facility: String, message: String) {
        let mapped: Logger.Level
        switch level {
        case ...2: mapped = .critical
        case 3: mapped = .error
        case 4: mapped = .warning
        case 5: mapped = .notice
        case 6: mapped = .info
        default: mapped = .debug
        }
        log(level: mapped, "\(message)", metadata: ["rdkafka.facility": "\(facility)"], source: "librdkafka")
    }
}

/// Runs blocking librdkafka calls (commit, flush, metadata, admin requests)
/// on Dispatch threads, never on Swift's cooperative pool.
enum Blocking {
    static let queue = DispatchQueue(label: "kafka.blocking", attributes: .concurrent)

    static func run<T: Sendable>(_ body: @escaping @Sendable () throws(KafkaError) -> T) async throws(KafkaError) -> T {
        let result: Result<T, KafkaError> = await withCheckedContinuation { continuation in
            queue.async {
                do throws(KafkaError) {
                    continuation.resume(returning: .success(try body()))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        return try result.get()
    }
}
