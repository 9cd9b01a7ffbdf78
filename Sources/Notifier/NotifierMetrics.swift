import Metrics

/// Series of the notifier that operators alert on, created with the notifier so that
/// they are exported (at 0) before anything happened.
public struct NotifierMetrics: Sendable {
    /// Event records that failed processing every time and were set aside.
    public let poisonRecords = Counter(label: "checkin_notifier_poison_records_total")
    /// Records sent to `checkin.events.dlq`, by why.
    public let notAnEventDeadLetters = Counter(
        label: "checkin_notifier_dead_letters_total", dimensions: [("reason", "not-an-event")])
    public let poisonDeadLetters = Counter(label: "checkin_notifier_dead_letters_total", dimensions: [("reason", "poison")])

    public init() {}
}
