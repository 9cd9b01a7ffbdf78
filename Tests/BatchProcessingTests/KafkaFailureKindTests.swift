import BatchProcessing
import Kafka
import Testing

/// A Kafka error is retried or set aside by its code alone: a retried record costs time,
/// while one set aside for an error that would have passed is a good record lost.
@Suite struct KafkaFailureKindTests {
    static let passing: [KafkaError.Code] = [
        .messageTimedOut, .leaderNotAvailable, .notLeaderForPartition, .transport, .unknownTopicOrPartition,
    ]
    static let aboutTheRecord: [KafkaError.Code] = [
        .messageSizeTooLarge, .invalidRecord, .recordListTooLarge, .invalidMessage, .invalidMessageSize,
        .invalidArgument, .badMessage, .invalidRequiredAcks,
    ]

    @Test("broker errors that pass with time are transient", arguments: passing)
    func passingErrorsAreTransient(code: KafkaError.Code) {
        #expect(FailureClassifier.classify(KafkaError(message: "send failed", code: code)) == .transient(component: "broker"))
    }

    @Test("broker errors about the record are certainly the record's", arguments: aboutTheRecord)
    func recordErrorsArePoison(code: KafkaError.Code) {
        guard case .poison(_, let certain) = FailureClassifier.classify(KafkaError(message: "send failed", code: code)) else {
            Issue.record("\(code) is not poison")
            return
        }
        #expect(certain)
    }

    @Test("the text of a Kafka error decides nothing")
    func textDecidesNothing() {
        let timedOut = KafkaError(message: "MSG_SIZE_TOO_LARGE", code: .messageTimedOut, reason: "INVALID_RECORD")
        #expect(FailureClassifier.classify(timedOut) == .transient(component: "broker"))
        let withoutCode = KafkaError(message: "send failed", reason: "Broker: Message size too large")
        #expect(FailureClassifier.classify(withoutCode) == .transient(component: "broker"))
    }
}
