/// The Kafka topics of the pipeline; every service can be pointed at other names.
public struct Topics: Sendable, Equatable {
    public var fixes: String
    public var fixesDeadLetter: String
    public var checkIns: String
    public var checkOuts: String
    /// Records on the event topics that are not events, set aside by the notifier.
    public var eventsDeadLetter: String

    public init(
        fixes: String = "checkin.fixes",
        fixesDeadLetter: String = "checkin.fixes.dlq",
        checkIns: String = "checkin.checkins",
        checkOuts: String = "checkin.checkouts",
        eventsDeadLetter: String = "checkin.events.dlq"
    ) {
        self.fixes = fixes
        self.fixesDeadLetter = fixesDeadLetter
        self.checkIns = checkIns
        self.checkOuts = checkOuts
        self.eventsDeadLetter = eventsDeadLetter
    }

    public var all: [String] { [fixes, fixesDeadLetter, checkIns, checkOuts, eventsDeadLetter] }

    /// Dead-letter records carry `checkin-error` and `checkin-origin-topic`,
    /// `-partition` and `-offset` headers.
    public static let deadLetterHeaderPrefix = "checkin-"
}
