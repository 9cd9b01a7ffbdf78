import Kafka
import Persistence
import PostgresNIO

/// What a failed attempt at a batch means for the worker, decided once, here, for
/// every consumer in the pipeline: wait for a dependency, give the work up to the
/// partition's new owner, or set one record aside so that its partition moves on.
package enum FailureKind: Sendable, Equatable {
    /// A dependency (`database`, `broker`) is unreachable, overloaded or slow: the same
    /// work succeeds once it is back, so the batch is retried and nothing is skipped.
    case transient(component: String)
    /// Another worker owns the partition now; its transaction was rolled back and the
    /// new owner processes the records from the committed offsets.
    case ownershipLost
    /// Something about the records themselves: retrying cannot help. `certain` when the failure
    /// can only be the record's own (its content or its size): a value Postgres cannot hold
    /// (SQLSTATE class 22, a NOT NULL or CHECK violation), a record the broker refuses, an
    /// error marked ``RecordFault``. Any other might be of the moment (a transaction that failed
    /// for a concurrent one's sake reads as 25P02): a record is set aside for it only once it
    /// has failed alone again (see ``PoisonIsolator``).
    case poison(reason: String, certain: Bool)
}

/// Sorts errors into ``FailureKind``s. Only errors known to be about the input are
/// poison outright; anything unrecognised is checked against the dependencies'
/// health by the caller before a record is set aside (see ``PoisonIsolator``).
package enum FailureClassifier {
    package static func classify(_ error: any Error) -> FailureKind {
        switch error {
        case is PartitionOwnershipLost:
            return .ownershipLost
        case let error as AttemptTimedOut:
            return .transient(component: error.component)
        case let error as PSQLError:
            return classify(error)
        case let error as KafkaError:
            return classify(error)
        case is DatabaseUnreachableError:
            return .transient(component: "database")
        case let error where DatabaseFailure.isTroubleOfTheDatabase(error):
            return .transient(component: "database")
        default:
            return .poison(reason: String(reflecting: error), certain: error is any RecordFault)
        }
    }

    /// SQLSTATE classes that say the server or the connection is in trouble, not the data:
    /// 08 connection exception, 40 transaction rollback (serialization, deadlock),
    /// 53 insufficient resources, 55 object not in prerequisite state (lock not available),
    /// 57 operator intervention (shutdown, statement timeout), 58 system error,
    /// 25P03 idle-in-transaction timeout, XX internal error.
    static let transientSQLStateClasses: Set<String> = ["08", "40", "53", "55", "57", "58", "XX"]

    static func classify(_ error: PSQLError) -> FailureKind {
        guard error.code == .server, let state = error.serverInfo?[.sqlState] else {
            // Everything but a server's answer is the connection failing or closing.
            return .transient(component: "database")
        }
        if state == "25P03" || transientSQLStateClasses.contains(String(state.prefix(2))) {
            return .transient(component: "database")
        }
        let message = error.serverInfo?[.message] ?? ""
        let certain = state.hasPrefix("22") || state == "23502" || state == "23514"
        return .poison(reason: "database refused the record (SQLSTATE \(state)): \(message)", certain: certain)
    }

    /// Kafka errors that are about the record itself; every other broker error
    /// (transport, time-outs, leadership changes, a full queue) passes with time.
    static let recordErrors: Set<KafkaError.Code> = [
        .messageSizeTooLarge, .invalidRecord, .recordListTooLarge, .invalidMessage, .invalidMessageSize,
        .invalidArgument, .badMessage, .invalidRequiredAcks,
    ]

    static func classify(_ error: KafkaError) -> FailureKind {
        if let code = error.code, recordErrors.contains(code) {
            return .poison(reason: "broker refused the record: \(error)", certain: true)
        }
        return .transient(component: "broker")
    }
}

/// An error about the record itself, which no retry can mend (an event larger than the
/// broker takes): its record is set aside at its first failure alone.
package protocol RecordFault: Error {}

/// An attempt that took longer than it may: treated as its dependency being unavailable.
package struct AttemptTimedOut: Error, Sendable, CustomStringConvertible {
    /// Blamed when the dependency at fault is not known.
    package static let unknownComponent = "processing"

    package var component: String
    package var limit: Duration

    package init(component: String, limit: Duration) {
        self.component = component
        self.limit = limit
    }

    package var description: String { "the attempt did not finish within \(limit)" }
}
