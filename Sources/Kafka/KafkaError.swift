/// Every failure of this module: what was being done, and librdkafka's own
/// error code and text when librdkafka reported it, so a log line is enough
/// to tell a missing topic from an unreachable broker, and a caller can tell
/// them apart by ``code`` without reading any text.
package struct KafkaError: Error, Sendable, CustomStringConvertible {
    /// Which librdkafka error it is, for callers to branch on: ``KafkaError/code`` equals one
    /// of the named codes (`.messageSizeTooLarge`, `.unknownTopicOrPartition`, ...) or none.
    /// A code without a name here is still carried, and logged under librdkafka's name.
    package struct Code: Hashable, Sendable, CustomStringConvertible {
        /// librdkafka's number for it: negative for the client's own errors, positive for the
        /// broker's. Only the RDKafka wrapper reads it.
        let rawValue: Int32

        init(rawValue: Int32) {
            self.rawValue = rawValue
        }

        /// librdkafka's symbolic name, e.g. `_MSG_TIMED_OUT` or `UNKNOWN_TOPIC_OR_PART`: for logs.
        package var description: String { name }
    }

    /// What failed, in this module's words.
    package var message: String
    /// librdkafka's error, when it reported one.
    package var code: Code?
    /// librdkafka's human-readable text for the error or its detailed reason.
    package var reason: String?
    /// The client can no longer be used (e.g. a fatal idempotent producer error).
    package var isFatal: Bool
    /// Trying the same operation again may succeed.
    package var isRetriable: Bool

    package init(
        message: String, code: Code? = nil, reason: String? = nil, isFatal: Bool = false, isRetriable: Bool = false
    ) {
        self.message = message
        self.code = code
        self.reason = reason
        self.isFatal = isFatal
        self.isRetriable = isRetriable
    }

    package var description: String {
        var text = message
        if let code {
            text += ": \(code.name)"
            if let reason, !reason.isEmpty { text += " (\(reason))" }
        } else if let reason, !reason.isEmpty {
            text += ": \(reason)"
        }
        if isFatal { text += " [fatal]" }
        return text
    }

    static func shutDown(_ what: String) -> KafkaError {
        KafkaError(message: "\(what): the client has been shut down")
    }
}
