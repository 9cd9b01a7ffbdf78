import Foundation
import Logging
import PostgresNIO
import Shared

/// One event to send to one endpoint.
package struct NewDelivery: Sendable {
    package var endpointId: String
    package var projectId: String
    package var eventId: String
    package var eventType: String
    package var deviceId: String
    /// When the check-in or check-out happened, for operators reading the queue.
    package var eventTime: Date
    /// The event's per-device `sequence`: a device's deliveries to an endpoint go out in
    /// this order. Nil for events from before events were numbered; those wait for nothing.
    package var sequence: Int?
    /// The exact body to send, fixed when the event is accepted so every attempt signs the same bytes.
    package var payload: String
    /// When the fix that decided the event was accepted, if known: its webhook is timed from it.
    package var fixAcceptedAt: Date?

    package init(
        endpointId: String, projectId: String, eventId: String, eventType: String, deviceId: String, eventTime: Date,
        sequence: Int?, payload: String, fixAcceptedAt: Date? = nil
    ) {
        self.endpointId = endpointId
        self.projectId = projectId
        self.eventId = eventId
        self.eventType = eventType
        self.deviceId = deviceId
        self.eventTime = eventTime
        self.sequence = sequence
        self.payload = payload
        self.fixAcceptedAt = fixAcceptedAt
    }
}

/// A delivery claimed for one attempt and leased to its notifier, as the database holds it:
/// its endpoint's secrets still sealed, for the notifier to open (``WebhookStore`` never
/// decides what a delivery that cannot be signed becomes).
package struct ClaimedDelivery: Sendable {
    package var id: Int64
    package var endpointId: String
    package var projectId: String
    package var url: String
    /// The endpoint's current secrets, newest first, sealed under the deployment's key.
    package var sealedSecrets: [String]
    package var eventId: String
    package var deviceId: String
    package var sequence: Int?
    /// The event's body; nil were it not kept (never for a delivery that is not erased).
    package var payload: String?
    /// Attempts so far, including this one.
    package var attempt: Int
    /// Claimed although the device's previous event never reached this endpoint's queue
    /// within the gap hold.
    package var skippedGap: Bool
    /// When it was queued, and when the fix that decided its event was accepted: the
    /// pipeline's stages are timed from them.
    package var queuedAt: Date?
    package var fixAcceptedAt: Date?

    package init(
        id: Int64, endpointId: String, projectId: String, url: String, sealedSecrets: [String], eventId: String,
        deviceId: String, sequence: Int?, payload: String?, attempt: Int, skippedGap: Bool = false, queuedAt: Date? = nil,
        fixAcceptedAt: Date? = nil
    ) {
        self.id = id
        self.endpointId = endpointId
        self.projectId = projectId
        self.url = url
        self.sealedSecrets = sealedSecrets
        self.eventId = eventId
        self.deviceId = deviceId
        self.sequence = sequence
        self.payload = payload
        self.attempt = attempt
        self.skippedGap = skippedGap
        self.queuedAt = queuedAt
        self.fixAcceptedAt = fixAcceptedAt
    }
}

/// What one attempt came to, as the dispatcher records it.
package struct DeliveryResult: Sendable {
    package enum Outcome: Sendable, Equatable {
        case delivered
        /// Try again after this long.
        case retry(after: Duration)
        /// No more attempts (replayable).
        case failed
    }

    package var deliveryId: Int64
    package var attempt: Int
    package var startedAt: Date
    package var latency: Duration
    package var statusCode: Int?
    package var error: String?
    package var outcome: Outcome

    package init(
        deliveryId: Int64, attempt: Int, startedAt: Date, latency: Duration, statusCode: Int?, error: String?,
        outcome: Outcome
    ) {
        self.deliveryId = deliveryId
        self.attempt = attempt
        self.startedAt = startedAt
        self.latency = latency
        self.statusCode = statusCode
        self.error = error
        self.outcome = outcome
    }
}

package enum DeliveryStatus: String, Sendable, Codable, CaseIterable {
    case pending, delivered, failed
    /// Never to be sent: its device was erased before it was delivered.
    case cancelled
}

/// Which deliveries a list shows: one status, or the pending ones attempted at least once
/// (`retrying`, as `checkin status` and the metrics count them).
package enum DeliveryListFilter: Sendable, Equatable {
    case status(DeliveryStatus)
    case retrying

    /// `pending`, `retrying`, `delivered`, `failed` or `cancelled`; nil for anything else.
    package init?(_ text: String) {
        if text == "retrying" {
            self = .retrying
        } else if let status = DeliveryStatus(rawValue: text) {
            self = .status(status)
        } else {
            return nil
        }
    }

    package static let names = "pending, retrying, delivered, failed or cancelled"
}

/// A page of a project's deliveries, newest first.
package struct DeliveryPage: Sendable {
    package var deliveries: [DeliveryRecord]
    /// Where the next (older) page starts; nil when this one is the last.
    package var nextCursor: Int64?
}

/// A delivery as listed to operators.
package struct DeliveryRecord: Sendable, Codable, Equatable {
    /// Written as its identifier, `dlv_42`.
    @DeliveryIdentifierCoded package var id: Int64
    package var endpointId: String
    package var eventId: String
    package var eventType: String
    package var deviceId: String
    package var sequence: Int?
    package var status: DeliveryStatus
    package var attempts: Int
    package var lastStatusCode: Int?
    package var lastError: String?
    package var createdAt: Date
    package var deliveredAt: Date?

    static let columns = """
        id, endpoint_id, event_id, event_type, device_id, sequence, status, attempts, last_status_code, last_error,
        created_at, delivered_at
        """

    init(row: PostgresRow) throws {
        let (id, endpointId, eventId, eventType, deviceId, sequence, status, attempts, code, error, createdAt, deliveredAt) =
            try row.decode((Int64, String, String, String, String, Int?, String, Int, Int?, String?, Date, Date?).self)
        self.id = id
        self.endpointId = endpointId
        self.eventId = eventId
        self.eventType = eventType
        self.deviceId = deviceId
        self.sequence = sequence
        self.status = DeliveryStatus(rawValue: status) ?? .pending
        self.attempts = attempts
        self.lastStatusCode = code
        self.lastError = error
        self.createdAt = createdAt
        self.deliveredAt = deliveredAt
    }
}

/// One attempt of a delivery, as kept for operators.
package struct DeliveryAttemptRecord: Sendable, Codable, Equatable {
    /// 1 until the delivery is replayed, 2 after its first replay, and so on: a replay counts
    /// the attempts from 1 again (the back-off starts over), so `attempt` alone repeats.
    package var round: Int
    /// Its number within the round.
    package var attempt: Int
    package var startedAt: Date
    package var latencyMilliseconds: Double
    package var statusCode: Int?
    package var error: String?
}

/// What a pending delivery waits for before its next attempt.
package enum DeliveryWait: String, Sendable, Codable {
    /// Its time, `nextAttemptAt`: the first attempt, a retry's back-off, or a gap's hold.
    case nextAttempt
    /// The attempt being made now.
    case attemptInFlight
    /// The device's earlier delivery to the same endpoint, which goes first.
    case earlierDelivery
    /// Its endpoint being enabled again.
    case endpointEnabled
}

/// A delivery with what it sends, where, what it waits for, its replays and every attempt
/// made so far (oldest first): what an operator asks about one delivery.
package struct DeliveryDetail: Sendable, Codable, Equatable {
    package var delivery: DeliveryRecord
    package var endpointUrl: String
    /// The exact body every attempt sends; nil once the device's data was erased.
    package var payload: String?
    /// For a pending delivery only.
    package var waitingFor: DeliveryWait?
    /// When it is due (with `waitingFor` `nextAttempt`).
    package var nextAttemptAt: Date?
    /// When it was queued again, oldest first: round `n + 1` of the attempt log began at `replays[n - 1]`.
    package var replays: [Date]
    package var attemptLog: [DeliveryAttemptRecord]
}


/// Deliveries queued again.
package struct ReplayedDeliveries: Sendable, Equatable {
    package var ids: [Int64]
    /// The disabled endpoints among the deliveries': what is queued for them waits until they
    /// are enabled again, which whoever replays them should be told.
    package var disabledEndpoints: [String]
    /// Deliveries asked for by id that the project does not have; when any are, none was
    /// queued again.
    package var missing: [Int64] = []
    /// Deliveries asked for by id that were erased with their device: their rows are kept
    /// (without the payload), so they cannot be sent again; when any are, none was queued again.
    package var erased: [Int64] = []
    /// Deliveries asked for by id that are still pending (queued, in flight or retrying);
    /// when any are, none was queued again.
    package var pending: [Int64] = []
}
