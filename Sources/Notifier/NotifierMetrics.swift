import Metrics

/// Series of the notifier that operators alert on, created with the notifier so that
/// they are exported (at 0) before anything happened.
package struct NotifierMetrics: Sendable {
    /// Records sent to `checkin.events.dlq` because they are not events. (Poison records
    /// and their dead letters are `ProcessingHealth`'s.)
    package let notAnEventDeadLetters = Counter(
        label: "checkin_notifier_dead_letters_total", dimensions: [("reason", "not-an-event")])

    package init() {}
}
