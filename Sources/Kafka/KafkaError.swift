import Crdkafka

/// Every failure of this module: what was being done, and librdkafka's own
/// error name and text when librdkafka reported it, so a log line is enough
/// to tell a missing topic from an unreachable broker.
public struct KafkaError: Error, Sendable, CustomStringConvertible {
    /// What failed, in this module's words.
    public var message: String
    /// librdkafka's error code (`rd_kafka_resp_err_t`), when it reported one.
    public var code: Int32?
    /// librdkafka's symbolic name, e.g. `_MSG_TIMED_OUT` or `UNKNOWN_TOPIC_OR_PART`.
    public var name: String?
    /// librdkafka's human-readable text for the error or its detailed reason.
    public var reason: String?
    /// The client can no longer be used (e.g. a fatal idempotent producer error).
    public var isFatal: Bool
    /// Trying the same operation again may succeed.
    public var isRetriable: Bool

    public init(
        message: String, code: Int32? = nil, name: String? = nil, reason: String? = nil, isFatal: Bool = false,
        isRetriable: Bool = false
    ) {
        self.message = message
        self.code = code
        self.name = name
        self.reason = reason
        self.isFatal = isFatal
        self.isRetriable = isRetriable
    }

    public var description: String {
        var text = message
        if let name {
            text += ": \(name)"
            if let reason, !reason.isEmpty { text += " (\(reason))" }
        } else if let reason, !reason.isEmpty {
            text += ": \(reason)"
        }
        if isFatal { text += " [fatal]" }
        return text
    }
}

extension KafkaError {
    /// An error from a librdkafka response code.
    init(_ message: String, code: rd_kafka_resp_err_t, reason: String? = nil, isFatal: Bool = false) {
        self.init(
            message: message,
            code: code.rawValue,
            name: String(cString: rd_kafka_err2name(code)),
            reason: reason ?? String(cString: rd_kafka_err2str(code)),
            isFatal: isFatal,
            isRetriable: false
        )
    }

    /// An error from an `rd_kafka_error_t`, which this takes ownership of and destroys.
    init(_ message: String, consuming error: OpaquePointer) {
        defer { rd_kafka_error_destroy(error) }
        self.init(
            message: message,
            code: rd_kafka_error_code(error).rawValue,
            name: String(cString: rd_kafka_error_name(error)),
            reason: String(cString: rd_kafka_error_string(error)),
            isFatal: rd_kafka_error_is_fatal(error) != 0,
            isRetriable: rd_kafka_error_is_retriable(error) != 0
        )
    }

    static func shutDown(_ what: String) -> KafkaError {
        KafkaError(message: "\(what): the client has been shut down")
    }
}
