/// The Kafka topics of the pipeline; every service can be pointed at other names.
public struct Topics: Sendable, Equatable {
    public var fixes: String
    public var fixesDeadLetter: String
    public var checkIns: String
    public var checkOuts: String

    public init(
        fixes: String = "checkin.fixes",
        fixesDeadLetter: String = "checkin.fixes.dlq",
        checkIns: String = "checkin.checkins",
        checkOuts: String = "checkin.checkouts"
    ) {
        self.fixes = fixes
        self.fixesDeadLetter = fixesDeadLetter
        self.checkIns = checkIns
        self.checkOuts = checkOuts
    }

    public var all: [String] { [fixes, fixesDeadLetter, checkIns, checkOuts] }
}
