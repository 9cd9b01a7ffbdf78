import Crdkafka
import Dispatch
import Logging

/// Owns one `rd_kafka_t` and destroys it when the last reference goes, so a
/// blocking call still running on another thread never sees a freed handle.
/// Everything C stays in this folder: the rest of the module calls the Swift
/// methods of this type and its companions and never sees a librdkafka pointer.
final class RDKafkaClient: @unchecked Sendable {
    /// Which kind of client librdkafka makes.
    enum Kind {
        case producer
        case consumer

        var rdkafka: rd_kafka_type_t {
            switch self {
            case .producer: RD_KAFKA_PRODUCER
            case .consumer: RD_KAFKA_CONSUMER
            }
        }
    }

    /// `@unchecked`: librdkafka handles are thread-safe; the pointers never change.
    let handle: OpaquePointer
    let logger: Logger
    /// Where the client connects (`bootstrap.servers`), for error messages.
    let bootstrapServers: String
    /// Retained for the handle's callbacks (its `opaque`), released after the handle is destroyed.
    private let callbackContext: Unmanaged<AnyObject>?

    private init(handle: OpaquePointer, logger: Logger, bootstrapServers: String, callbackContext: Unmanaged<AnyObject>?) {
        self.handle = handle
        self.logger = logger
        self.bootstrapServers = bootstrapServers
        self.callbackContext = callbackContext
    }

    deinit {
        rd_kafka_destroy(handle)
        callbackContext?.release()
    }

    /// Creates a handle from string properties; `configure` may install callbacks
    /// on the `rd_kafka_conf_t` before librdkafka takes it over.
    static func make(
        _ kind: Kind, properties: [String: String], callbackContext: (any RDKafkaCallbackContext)? = nil, logger: Logger,
        configure: (OpaquePointer) -> Void = { _ in }
    ) throws(KafkaError) -> RDKafkaClient {
        guard let conf = rd_kafka_conf_new() else { throw KafkaError(message: "could not allocate a configuration") }
        if let (name, refusal) = RDKafkaConfiguration.set(properties, on: conf).first {
            rd_kafka_conf_destroy(conf)
            throw KafkaError(message: "invalid librdkafka property \(name)=\(properties[name] ?? "")", reason: refusal)
        }
        let unmanaged = callbackContext.map { Unmanaged<AnyObject>.passRetained($0 as AnyObject) }
        if let unmanaged { rd_kafka_conf_set_opaque(conf, unmanaged.toOpaque()) }
        configure(conf)
        var errorText = [CChar](repeating: 0, count: 512)
        // On success rd_kafka_new owns conf; on failure it stays ours.
        guard let handle = rd_kafka_new(kind.rdkafka, conf, &errorText, errorText.count) else {
            rd_kafka_conf_destroy(conf)
            unmanaged?.release()
            throw KafkaError(
                message: "could not create the Kafka client",
                reason: string(errorText))
        }
        return RDKafkaClient(
            handle: handle, logger: logger, bootstrapServers: properties["bootstrap.servers"] ?? "", callbackContext: unmanaged)
    }

    /// A client whose only callbacks are its logs, served by whichever thread polls it
    /// (for admin requests, offset reading, a mock cluster). `quietLogs`: librdkafka's
    /// warnings are expected noise (a broker that may be down) and logged at debug level.
    static func makeLogging(
        _ kind: Kind, properties: [String: String], quietLogs: Bool, logger: Logger
    ) throws(KafkaError) -> RDKafkaClient {
        let client = try make(
            kind, properties: properties, callbackContext: LogContext(logger: logger, quietLogs: quietLogs), logger: logger,
            configure: Callbacks.installLogging)
        client.routeLogsToMainQueue()
        return client
    }

    /// With `log.queue=true`, logs wait on the main queue for a poll of it.
    func routeLogsToMainQueue() {
        rd_kafka_set_log_queue(handle, nil)
    }

    /// Serves the main queue's callbacks (logs, errors) that are due, without waiting.
    func serveCallbacks() {
        rd_kafka_poll(handle, 0)
    }

    /// The value the client runs with for a property, as librdkafka reports it (`acks=all` reads as -1).
    func configurationValue(_ name: String) -> String? {
        guard let conf = rd_kafka_conf(handle) else { return nil }
        var value = [CChar](repeating: 0, count: 64)
        var size = value.count
        guard rd_kafka_conf_get(conf, name, &value, &size) == RD_KAFKA_CONF_OK else { return nil }
        return Self.string(value)
    }

    /// The text librdkafka wrote into an error buffer.
    static func string(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The error librdkafka declared fatal for this handle, if any.
    func fatalError() -> KafkaError? {
        var text = [CChar](repeating: 0, count: 512)
        let code = rd_kafka_fatal_error(handle, &text, text.count)
        guard code != RD_KAFKA_RESP_ERR_NO_ERROR else { return nil }
        return KafkaError("fatal client error", code: code, reason: RDKafkaClient.string(text), isFatal: true)
    }
}

/// Setting librdkafka properties on a configuration.
enum RDKafkaConfiguration {
    /// Sets each property (in name order); returns those librdkafka refused, with its reason.
    static func set(_ properties: [String: String], on conf: OpaquePointer) -> [(property: String, reason: String)] {
        var refused: [(property: String, reason: String)] = []
        var errorText = [CChar](repeating: 0, count: 512)
        for (name, value) in properties.sorted(by: { $0.key < $1.key }) {
            if rd_kafka_conf_set(conf, name, value, &errorText, errorText.count) != RD_KAFKA_CONF_OK {
                refused.append((name, RDKafkaClient.string(errorText)))
            }
        }
        return refused
    }

    /// The properties librdkafka refuses (unknown names, malformed values, features this
    /// build lacks), found by configuring a client without creating one.
    static func refusals(_ properties: [String: String]) -> [(property: String, reason: String)] {
        guard let conf = rd_kafka_conf_new() else { return [] }
        defer { rd_kafka_conf_destroy(conf) }
        return set(properties, on: conf)
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
