import Crdkafka

/// The codes callers tell apart, each librdkafka's own (`rd_kafka_resp_err_t`), so that
/// a code can never drift from the error librdkafka reports.
extension KafkaError.Code {
    init(_ code: rd_kafka_resp_err_t) {
        self.init(rawValue: code.rawValue)
    }

    var rdkafka: rd_kafka_resp_err_t { rd_kafka_resp_err_t(rawValue: rawValue) }

    /// librdkafka's symbolic name, e.g. `_MSG_TIMED_OUT`.
    var name: String { String(cString: rd_kafka_err2name(rdkafka)) }

    /// librdkafka's human-readable text for the code.
    var text: String { String(cString: rd_kafka_err2str(rdkafka)) }

    // About the record itself: no retry makes the broker take it.

    /// Larger than the producer's `message.max.bytes` or the topic's `max.message.bytes`.
    package static let messageSizeTooLarge = Self(RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE)
    /// The broker found the record invalid (its checks of content, keys or timestamps).
    package static let invalidRecord = Self(RD_KAFKA_RESP_ERR_INVALID_RECORD)
    /// The batch the record went in is larger than the broker takes.
    package static let recordListTooLarge = Self(RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE)
    /// The record failed its checksum or could not be parsed (`INVALID_MSG`, also named `CORRUPT_MESSAGE`).
    package static let invalidMessage = Self(RD_KAFKA_RESP_ERR_INVALID_MSG)
    /// The record's size field does not match its bytes.
    package static let invalidMessageSize = Self(RD_KAFKA_RESP_ERR_INVALID_MSG_SIZE)
    /// The client refused a value it was given (`_INVALID_ARG`).
    package static let invalidArgument = Self(RD_KAFKA_RESP_ERR__INVALID_ARG)
    /// The client could not encode or decode the record (`_BAD_MSG`).
    package static let badMessage = Self(RD_KAFKA_RESP_ERR__BAD_MSG)
    /// The producer asked for an acknowledgement the broker does not offer.
    package static let invalidRequiredAcks = Self(RD_KAFKA_RESP_ERR_INVALID_REQUIRED_ACKS)

    // About the topic or the cluster.

    /// The broker knows no such topic or partition.
    package static let unknownTopicOrPartition = Self(RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART)
    /// The client knows no such partition of the topic (`_UNKNOWN_PARTITION`).
    package static let unknownPartition = Self(RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION)
    /// The client may not write to (or read) the topic.
    package static let topicAuthorizationFailed = Self(RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED)
    /// The partition has no leader at the moment (an election is under way).
    package static let leaderNotAvailable = Self(RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE)
    /// The broker asked no longer leads the partition.
    package static let notLeaderForPartition = Self(RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION)

    // About the client.

    /// librdkafka gave up on the record within `message.timeout.ms` (`_MSG_TIMED_OUT`).
    package static let messageTimedOut = Self(RD_KAFKA_RESP_ERR__MSG_TIMED_OUT)
    /// The connection to the broker failed (`_TRANSPORT`).
    package static let transport = Self(RD_KAFKA_RESP_ERR__TRANSPORT)
    /// The client hit an error it cannot go on from; its fatal error says which (`_FATAL`).
    package static let fatal = Self(RD_KAFKA_RESP_ERR__FATAL)
}

extension KafkaError {
    /// An error from a librdkafka response code, with librdkafka's text for it unless a reason is given.
    init(_ message: String, code: rd_kafka_resp_err_t, reason: String? = nil, isFatal: Bool = false) {
        self.init(_: message, code: Code(code), reason: reason, isFatal: isFatal)
    }

    init(_ message: String, code: Code, reason: String? = nil, isFatal: Bool = false) {
        self.init(message: message, code: code, reason: reason ?? code.text, isFatal: isFatal, isRetriable: false)
    }

    /// An error from an `rd_kafka_error_t`, which this takes ownership of and destroys.
    init(_ message: String, consuming error: OpaquePointer) {
        defer { rd_kafka_error_destroy(error) }
        self.init(
            message: message,
            code: Code(rd_kafka_error_code(error)),
            reason: String(cString: rd_kafka_error_string(error)),
            isFatal: rd_kafka_error_is_fatal(error) != 0,
            isRetriable: rd_kafka_error_is_retriable(error) != 0
        )
    }
}
