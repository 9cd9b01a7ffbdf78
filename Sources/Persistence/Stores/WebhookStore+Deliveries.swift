import Foundation
import Logging
import PostgresNIO
import Shared

/// One event to send to one endpoint.
public struct NewDelivery: Sendable {
    public var endpointId: String
    public var projectId: String
    public var eventId: String
    public var eventType: String
    public var deviceId: String
    /// When the check-in or check-out happened, for operators reading the queue.
    public var eventTime: Date
    /// The event's per-device `sequence`: a device's deliveries to an endpoint go out in
    /// this order. Nil for events from before events were numbered; those wait for nothing.
    public var sequence: Int?
    /// The exact body to send, fixed when the event is accepted so every attempt signs the same bytes.
    public var payload: String
    /// When the fix that decided the event was accepted, if known: its webhook is timed from it.
    public var fixAcceptedAt: Date?

    public init(
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

/// A delivery claimed for an attempt, with what is needed to send it.
public struct DeliveryAttempt: Sendable {
    public var id: Int64
    public var endpointId: String
    public var projectId: String
    public var url: String
    public var secrets: [String]
    public var eventId: String
    public var deviceId: String
    public var sequence: Int?
    public var payload: String
    /// Attempts so far, including this one.
    public var attempt: Int
    /// Claimed although the device's previous event never reached this endpoint's queue
    /// within the gap hold.
    public var skippedGap: Bool
    /// When it was queued, and when the fix that decided its event was accepted: the
    /// pipeline's stages are timed from them.
    public var queuedAt: Date?
    public var fixAcceptedAt: Date?

    public init(
        id: Int64, endpointId: String, projectId: String, url: String, secrets: [String], eventId: String,
        deviceId: String, sequence: Int?, payload: String, attempt: Int, skippedGap: Bool = false, queuedAt: Date? = nil,
        fixAcceptedAt: Date? = nil
    ) {
        self.id = id
        self.endpointId = endpointId
        self.projectId = projectId
        self.url = url
        self.secrets = secrets
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
public struct DeliveryResult: Sendable {
    public enum Outcome: Sendable, Equatable {
        case delivered
        /// Try again after this long.
        case retry(after: Duration)
        /// No more attempts (replayable).
        case failed
    }

    public var deliveryId: Int64
    public var attempt: Int
    public var startedAt: Date
    public var latency: Duration
    public var statusCode: Int?
    public var error: String?
    public var outcome: Outcome

    public init(
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

public enum DeliveryStatus: String, Sendable, Codable, CaseIterable {
    case pending, delivered, failed
    /// Never to be sent: its device was erased before it was delivered.
    case cancelled
}

/// Which deliveries a list shows: one status, or the pending ones attempted at least once
/// (`retrying`, as `checkin status` and the metrics count them).
public enum DeliveryListFilter: Sendable, Equatable {
    case status(DeliveryStatus)
    case retrying

    /// `pending`, `retrying`, `delivered`, `failed` or `cancelled`; nil for anything else.
    public init?(_ text: String) {
        if text == "retrying" {
            self = .retrying
        } else if let status = DeliveryStatus(rawValue: text) {
            self = .status(status)
        } else {
            return nil
        }
    }

    public static let names = "pending, retrying, delivered, failed or cancelled"
}

/// A page of a project's deliveries, newest first.
public struct DeliveryPage: Sendable {
    public var deliveries: [DeliveryRecord]
    /// Where the next (older) page starts; nil when this one is the last.
    public var nextCursor: Int64?
}

/// A delivery as listed to operators.
public struct DeliveryRecord: Sendable, Codable, Equatable {
    /// Written as its identifier, `dlv_42`.
    @DeliveryIdentifierCoded public var id: Int64
    public var endpointId: String
    public var eventId: String
    public var eventType: String
    public var deviceId: String
    public var sequence: Int?
    public var status: DeliveryStatus
    public var attempts: Int
    public var lastStatusCode: Int?
    public var lastError: String?
    public var createdAt: Date
    public var deliveredAt: Date?

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
public struct DeliveryAttemptRecord: Sendable, Codable, Equatable {
    /// 1 until the delivery is replayed, 2 after its first replay, and so on: a replay counts
    /// the attempts from 1 again (the back-off starts over), so `attempt` alone repeats.
    public var round: Int
    /// Its number within the round.
    public var attempt: Int
    public var startedAt: Date
    public var latencyMilliseconds: Double
    public var statusCode: Int?
    public var error: String?
}

/// What a pending delivery waits for before its next attempt.
public enum DeliveryWait: String, Sendable, Codable {
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
public struct DeliveryDetail: Sendable, Codable, Equatable {
    public var delivery: DeliveryRecord
    public var endpointUrl: String
    /// The exact body every attempt sends; nil once the device's data was erased.
    public var payload: String?
    /// For a pending delivery only.
    public var waitingFor: DeliveryWait?
    /// When it is due (with `waitingFor` `nextAttempt`).
    public var nextAttemptAt: Date?
    /// When it was queued again, oldest first: round `n + 1` of the attempt log began at `replays[n - 1]`.
    public var replays: [Date]
    public var attemptLog: [DeliveryAttemptRecord]
}

extension WebhookStore {
    /// Adds deliveries (all or none); an (endpoint, event) pair already queued is left as it
    /// is, which makes a redelivered event harmless. Returns how many were new.
    ///
    /// Only a device's first pending delivery to an endpoint is due; the ones behind it wait
    /// at 'infinity' until it is done (`record` lets the next one go), and one whose
    /// predecessor is not queued yet (it comes from the other event topic) is due only once
    /// `gapHold` has passed, unless the predecessor comes first. So a claim reads the
    /// deliveries that may go, never the backlog behind them.
    ///
    /// The devices' pending deliveries are locked first (in id order, as `record` locks
    /// them) and the new ones judged afterwards, in a statement that sees them as they are
    /// then: a predecessor being recorded as delivered at the same moment either is seen
    /// done here, or its recording sees the new delivery waiting behind it and lets it go.
    @discardableResult
    public func enqueue(_ deliveries: [NewDelivery], gapHold: Duration = .zero) async throws -> Int {
        try await enqueue(deliveries, gapHold: gapHold, claim: nil).queued
    }

    /// Who takes the deliveries that may go at once as they are queued: at most `limit`, none
    /// of the endpoints in `excluding` (the taker holds enough of theirs already).
    public struct QueueClaim: Sendable {
        public var owner: String
        public var lease: Duration
        public var limit: Int
        public var excluding: [String]

        public init(owner: String, lease: Duration, limit: Int, excluding: [String] = []) {
            self.owner = owner
            self.lease = lease
            self.limit = limit
            self.excluding = excluding
        }
    }

    /// Queues deliveries as `enqueue(_:gapHold:)` does and, with `claim`, claims those that
    /// may go at once for its owner in the same transaction, ready to send: a delivery
    /// queued with nothing of its device ahead of it costs no separate claim, and waits for
    /// none. Returns how many were new and the claimed ones.
    /// `dueUnclaimed` counts those that may go at once but were not claimed for want of room
    /// (a claim should look for them); those of an excluded endpoint are not counted: they
    /// wait until the taker holds fewer of that endpoint's, which it sees by itself.
    public func enqueue(_ deliveries: [NewDelivery], gapHold: Duration = .zero, claim: QueueClaim?) async throws
        -> (queued: Int, claimed: [DeliveryAttempt], dueUnclaimed: Int)
    {
        let deliveries = Self.once(deliveries)
        guard !deliveries.isEmpty else { return (0, [], 0) }
        let bodies = EventPayload.bodies(of: deliveries)
        let (queued, due, claimed, unsigned) = try await database.withTransaction { connection in
            // An erasure's sweep of these projects waits for this queueing, or it sees the erasure.
            try await ErasureStore.holdIntake(projects: Set(deliveries.map(\.projectId)), on: connection, logger: logger)
            try await connection.perform(Self.lockStatement(deliveries), logger: logger)
            // Those that may go at once are claimed by the insert itself (attempt 1, leased to the
            // taker), in the batch's order up to the taker's limit: a row written once, not
            // written and then updated in the same transaction.
            let taker = claim ?? QueueClaim(owner: "", lease: .zero, limit: 0)
            let rows = try await connection.query(
                Self.queueStatement(deliveries, bodies: bodies, gapHold: gapHold, taker: taker), logger: logger)
            var inserted = 0
            var due = 0
            var dueOfExcluded = 0
            var taken: [ClaimedRow] = []
            for try await row in rows {
                let columns = row.makeRandomAccess()
                let isDue = try columns[ClaimedRow.columnCount].decode(Bool.self)
                let isTaken = try columns[ClaimedRow.columnCount + 1].decode(Bool.self)
                inserted += 1
                if isDue { due += 1 }
                if isTaken {
                    var claimed = try ClaimedRow(row)
                    claimed.payload = bodies[EventPayload.Key(projectId: claimed.projectId, eventId: claimed.eventId)]
                    taken.append(claimed)
                }
                if isDue, taker.excluding.contains(try columns[1].decode(String.self)) { dueOfExcluded += 1 }
            }
            let (opened, unsigned) = try openedAttempts(taken)
            return (inserted, due - dueOfExcluded, opened, unsigned)
        }
        if let claim { try await recordUnsigned(unsigned, owner: claim.owner) }
        return (queued, claimed, due - claimed.count - unsigned.count)
    }

    /// Each (endpoint, event) of a batch once, the first copy kept: the event topics are read
    /// at least once, so a batch can hold an event twice, and the second copy would take a
    /// turn of its device behind the first (judged to wait at 'infinity') while the insert
    /// keeps whichever copy it meets first.
    static func once(_ deliveries: [NewDelivery]) -> [NewDelivery] {
        var seen: Set<EndpointEvent> = []
        seen.reserveCapacity(deliveries.count)
        return deliveries.filter { seen.insert(EndpointEvent(endpointId: $0.endpointId, eventId: $0.eventId)).inserted }
    }

    struct EndpointEvent: Hashable {
        var endpointId: String
        var eventId: String
    }

    /// The statement of `enqueue` that locks the pending deliveries of the batch's devices
    /// (to the batch's endpoints), on its own so that its plan can be checked.
    ///
    /// Those waiting behind another too: between this lock and the judging that follows,
    /// the recording of its predecessor could take a waiting one, and be recorded in turn
    /// before it sees the new delivery (which would then wait for the mend pass).
    /// Found by one probe of the pending-heads index for each device and endpoint (a join
    /// was planned as a scan of every pending delivery), then locked in id order, each by
    /// its own key (see `recordLockStatement`).
    static func lockStatement(_ deliveries: [NewDelivery]) -> PostgresQuery {
        """
        SELECT l.id
          FROM (SELECT p.id
                  FROM (SELECT DISTINCT endpoint_id, device_id
                          FROM UNNEST(\(deliveries.map(\.endpointId))::text[], \(deliveries.map(\.deviceId))::text[])
                               AS s(endpoint_id, device_id)) s
                 CROSS JOIN LATERAL (
                     SELECT p.id FROM deliveries p
                      WHERE p.endpoint_id = s.endpoint_id AND p.device_id = s.device_id AND p.status = 'pending'
                     OFFSET 0) p
                 ORDER BY p.id) k
         CROSS JOIN LATERAL (SELECT d.id FROM deliveries d WHERE d.id = k.id FOR SHARE OF d) l
        """
    }

    /// The statement of `enqueue` that writes the new deliveries (after their devices'
    /// pending ones are locked) and their events' `bodies`, on its own so that what it reads
    /// can be measured (EXPLAIN).
    ///
    /// It holds the batch three times (as unnested, as judged, as inserted): without the
    /// bodies in its rows, 500 events to ten endpoints stay within Postgres's default 4 MB a
    /// node (they spilled to temporary files while each row carried its body).
    static func queueStatement(
        _ deliveries: [NewDelivery], bodies: [EventPayload.Key: String], gapHold: Duration, taker: QueueClaim
    ) -> PostgresQuery {
        let epoch = Date(timeIntervalSince1970: 0)
        let events = Array(bodies)
        return """
            WITH stored AS (
                -- Each event's body once, whatever the number of its endpoints. One already kept
                -- (an event consumed again) is locked, not skipped: a purge of bodies no delivery
                -- needs any more waits for this transaction, and then sees its new deliveries.
                INSERT INTO event_payloads (project_id, event_id, payload)
                SELECT * FROM UNNEST(\(events.map(\.key.projectId))::text[], \(events.map(\.key.eventId))::text[],
                                     \(events.map(\.value))::text[]) AS e(project_id, event_id, payload)
                 -- Never the body of an erased device's event (one read again from its topic).
                 WHERE NOT EXISTS (SELECT 1 FROM erased_events erased WHERE erased.project_id = e.project_id AND erased.event_id = e.event_id)
                 -- In key order, as every writer of these rows takes them: never a deadlock.
                 ORDER BY project_id, event_id
                ON CONFLICT (project_id, event_id) DO UPDATE SET payload = event_payloads.payload
            ), incoming AS (
                -- What is new (a repeat of a queued event is no turn of its device's), with its
                -- turn among the batch's new deliveries of its device and endpoint.
                SELECT u.*, row_number() OVER (PARTITION BY u.endpoint_id, u.device_id ORDER BY u.sequence, u.event_id) AS turn
                  FROM UNNEST(\(deliveries.map(\.endpointId))::text[], \(deliveries.map(\.projectId))::text[],
                              \(deliveries.map(\.eventId))::text[], \(deliveries.map(\.eventType))::text[],
                              \(deliveries.map(\.deviceId))::text[], \(deliveries.map(\.eventTime))::timestamptz[],
                              \(deliveries.map { $0.sequence ?? 0 })::bigint[],
                              \(deliveries.map { $0.fixAcceptedAt ?? epoch })::timestamptz[]) WITH ORDINALITY
                       AS u(endpoint_id, project_id, event_id, event_type, device_id, event_time, sequence,
                            fix_accepted_at, arrival)
                 -- A scalar subquery: one probe of the unique key a delivery, never a hash of the
                 -- whole table (which the planner chose for small rows).
                 WHERE (SELECT true FROM deliveries x WHERE x.endpoint_id = u.endpoint_id AND x.event_id = u.event_id) IS NULL
                   -- An erased device's event never becomes a delivery, however often it is read.
                   AND NOT EXISTS (SELECT 1 FROM erased_events erased WHERE erased.project_id = u.project_id AND erased.event_id = u.event_id)
            ), judged AS MATERIALIZED (
                -- Materialized: judged once a delivery, where inlined each use of `due_at`
                -- below (the sort, the taking, the insert) ran its lookups again.
                SELECT u.*,
                       CASE WHEN EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.id = u.endpoint_id AND NOT e.enabled)
                            THEN 'infinity'::timestamptz
                            -- Behind an earlier delivery of the device, in this batch or already queued,
                            -- or behind one in flight (a later one sent past a gap): one at a time.
                            WHEN u.turn > 1 OR EXISTS (
                                SELECT 1 FROM deliveries h
                                 WHERE h.endpoint_id = u.endpoint_id AND h.device_id = u.device_id AND h.status = 'pending'
                                   AND (COALESCE(h.sequence, 0) <= u.sequence OR h.leased_until > now()))
                            THEN 'infinity'::timestamptz
                            -- Its predecessor not queued (yet): it waits for it, up to the gap hold.
                            -- (A scalar subquery: one index probe per row, never a hash of the table.)
                            WHEN u.sequence > 1 AND (
                                SELECT true FROM deliveries p
                                 WHERE p.endpoint_id = u.endpoint_id AND p.device_id = u.device_id
                                   AND p.sequence = u.sequence - 1 LIMIT 1) IS NULL
                            THEN now() + make_interval(secs => \(gapHold.seconds))
                            ELSE now() END AS due_at
                  FROM incoming u
            ), offered AS (
                SELECT j.*, j.due_at <= now() AND NOT (j.endpoint_id = ANY(\(taker.excluding)::text[])) AS takeable
                  FROM judged j
            ), taking AS (
                SELECT o.*, o.takeable AND row_number() OVER (PARTITION BY o.takeable ORDER BY o.arrival) <= \(taker.limit) AS taken
                  FROM offered o
            ), inserted AS (
                INSERT INTO deliveries (endpoint_id, project_id, event_id, event_type, device_id, event_time, sequence,
                                        fix_accepted_at, next_attempt_at, attempts, lease_owner, leased_until)
                SELECT t.endpoint_id, t.project_id, t.event_id, t.event_type, t.device_id, t.event_time,
                       NULLIF(t.sequence, 0), NULLIF(t.fix_accepted_at, 'epoch'),
                       CASE WHEN t.taken THEN 'infinity'::timestamptz ELSE t.due_at END,
                       CASE WHEN t.taken THEN 1 ELSE 0 END,
                       CASE WHEN t.taken THEN \(taker.owner) END,
                       CASE WHEN t.taken THEN now() + make_interval(secs => \(taker.lease.seconds)) END
                  FROM taking t
                 ORDER BY t.arrival
                ON CONFLICT (endpoint_id, event_id) DO NOTHING
                RETURNING id, endpoint_id, project_id, event_id, device_id, sequence, attempts, created_at,
                          fix_accepted_at, lease_owner IS NOT NULL AS taken,
                          lease_owner IS NOT NULL OR next_attempt_at <= now() AS due
            ), behind AS (
                -- A predecessor that came late goes first: what was queued after it waits again.
                UPDATE deliveries l SET next_attempt_at = 'infinity'
                  FROM inserted i
                 WHERE l.endpoint_id = i.endpoint_id AND l.device_id = i.device_id AND l.sequence > i.sequence
                   AND l.status = 'pending' AND l.next_attempt_at < 'infinity'
                   AND (l.leased_until IS NULL OR l.leased_until <= now())
                RETURNING l.id
            )
            -- Each new one in the shape of a claimed row (`ClaimedRow`), then whether it is due and taken.
            -- Without its body: the statement does not see the bodies it stores, the caller has them.
            SELECT i.id, i.endpoint_id, i.project_id, e.url,
                   CASE WHEN i.taken
                        THEN ARRAY(SELECT s.sealed FROM webhook_secrets s
                                    WHERE s.endpoint_id = e.id AND (s.expires_at IS NULL OR s.expires_at > now())
                                    ORDER BY s.id DESC)
                        ELSE '{}'::text[] END,
                   i.event_id, i.device_id, COALESCE(i.sequence, 0), NULL::text,
                   i.attempts, false, i.created_at, i.fix_accepted_at, i.due, i.taken
              FROM inserted i JOIN webhook_endpoints e ON e.id = i.endpoint_id
             ORDER BY i.id
            """
    }

    /// Claims up to `limit` deliveries that may be sent now, at most `perEndpoint` of any one
    /// endpoint, each for one attempt, leased to `owner` for `lease` (renewed with
    /// `renewLeases` while the attempt runs). While leased it waits at 'infinity', out of
    /// the due order: `releaseLapsedLeases` lets it go again if its notifier stops.
    ///
    /// A device's deliveries to an endpoint go in `sequence` order: one waits while an earlier
    /// one is pending (queued, in flight or retrying), so at most one per device and endpoint
    /// is out at a time. One whose predecessor is not queued yet (it comes from the other
    /// event topic, not consumed yet) waits for it up to `gapHold` after being queued.
    /// Deliveries of a disabled endpoint wait until it is enabled again, and endpoints in
    /// `excluding` (the caller holds enough of theirs already) are passed over, so that a
    /// backlog at one endpoint never fills a claim.
    ///
    /// A claim reads nothing of what waits behind the deliveries it takes: a late predecessor
    /// of one in flight (sent past the gap hold) is never due while that one is out (see
    /// `anotherOfItsDeviceInFlight`).
    public func claimDue(
        limit: Int, perEndpoint: Int, owner: String, lease: Duration, gapHold: Duration, excluding: [String] = []
    ) async throws -> [DeliveryAttempt] {
        let (opened, unsigned) = try await database.withTransaction(settings: Self.claimSettings) { connection in
            let rows = try await connection.query(
                Self.claimStatement(
                    limit: limit, perEndpoint: perEndpoint, owner: owner, lease: lease, gapHold: gapHold,
                    excluding: excluding),
                logger: logger)
            return try await openAttempts(rows)
        }
        try await recordUnsigned(unsigned, owner: owner)
        return opened
    }

    /// Set for the claim alone. The due order is read by an index scan, never a bitmap scan
    /// (the planner's pick once the queue is large and much updated): the versions that
    /// deliveries leave behind in the due order until a vacuum are marked dead by the first
    /// index scan that meets them and passed over by the next, where a bitmap scan reads the
    /// row of every one of them on every claim, most of which find nothing due.
    static let claimSettings = ["enable_bitmapscan = off"]

    /// The statement of `claimDue`, on its own so that what it reads can be measured (EXPLAIN).
    ///
    /// The due order is kept by endpoint (`deliveries_due_order`: endpoint, time, id), so that
    /// a claim reads the endpoints it may take from and passes over the others whole: an
    /// endpoint the claimer holds enough of (`excluding`), however large its due backlog, or a
    /// disabled one, costs one step of the walk over the endpoints, not a read of each of its
    /// due rows. The walk takes one index descent per endpoint with deliveries scheduled (its
    /// oldest comes with it); the endpoints that may take are then served oldest first, each
    /// for at most twice what the claim may take of it, and the reading stops once the
    /// window is full: what a claim reads follows what it takes, not the backlog.
    static func claimStatement(
        limit: Int, perEndpoint: Int, owner: String, lease: Duration, gapHold: Duration, excluding: [String]
    ) -> PostgresQuery {
        """
            WITH RECURSIVE scheduled(endpoint_id, oldest) AS (
                -- Each endpoint with deliveries scheduled (a time to go, not 'infinity') and the
                -- time of its oldest, one index descent an endpoint.
                (SELECT d.endpoint_id, d.next_attempt_at FROM deliveries d
                  WHERE d.status = 'pending' AND d.next_attempt_at < 'infinity'
                  ORDER BY d.endpoint_id, d.next_attempt_at, d.id LIMIT 1)
                UNION ALL
                SELECT n.endpoint_id, n.next_attempt_at
                  FROM scheduled s
                 CROSS JOIN LATERAL (
                     SELECT d.endpoint_id, d.next_attempt_at FROM deliveries d
                      WHERE d.status = 'pending' AND d.next_attempt_at < 'infinity' AND d.endpoint_id > s.endpoint_id
                      ORDER BY d.endpoint_id, d.next_attempt_at, d.id LIMIT 1) n
            ), takers AS MATERIALIZED (
                -- The endpoints with deliveries due that this claim may take from, oldest first.
                SELECT s.endpoint_id, s.oldest FROM scheduled s
                 WHERE s.oldest <= now() AND NOT (s.endpoint_id = ANY(\(excluding)::text[]))
                   AND EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.id = s.endpoint_id AND e.enabled)
                 ORDER BY s.oldest, s.endpoint_id
                 LIMIT \(limit)
            ), due_window AS MATERIALIZED (
                -- Their due deliveries in the order they go, at most twice what the claim may take
                -- of each: each device's first pending one (those behind it wait at 'infinity',
                -- those in flight until their lease ends), read until the window is full.
                SELECT w.* FROM takers t
                 CROSS JOIN LATERAL (
                     SELECT d.id, d.endpoint_id, d.device_id, d.sequence, d.created_at, d.next_attempt_at, d.leased_until
                       FROM deliveries d
                      WHERE d.endpoint_id = t.endpoint_id AND d.status = 'pending' AND d.next_attempt_at < 'infinity'
                        AND d.next_attempt_at <= now()
                      ORDER BY d.next_attempt_at, d.id
                      LIMIT \(2 * perEndpoint)) w
                 LIMIT \(4 * limit)
            ), checked AS (
                -- Checked again, whatever led here: the device's first pending delivery (one
                -- probe of the pending-heads index), not leased; and whether its predecessor is
                -- missing (not queued, from the other event topic).
                SELECT w.id, w.endpoint_id, w.next_attempt_at, w.created_at,
                       COALESCE(w.sequence > 1, false)
                           AND (SELECT true FROM deliveries p
                                 WHERE p.endpoint_id = w.endpoint_id AND p.device_id = w.device_id
                                   AND p.sequence = w.sequence - 1 LIMIT 1) IS NULL AS skipped_gap
                  FROM due_window w
                 WHERE (w.leased_until IS NULL OR w.leased_until <= now())
                   AND w.id = (SELECT p.id FROM deliveries p
                                WHERE p.endpoint_id = w.endpoint_id AND p.device_id = w.device_id
                                  AND p.status = 'pending'
                                ORDER BY p.sequence NULLS FIRST, p.id LIMIT 1)
            ), eligible AS (
                -- One whose predecessor is missing goes once the gap hold has passed.
                SELECT id, endpoint_id, next_attempt_at, skipped_gap FROM checked
                 WHERE NOT skipped_gap OR created_at <= now() - make_interval(secs => \(gapHold.seconds))
            ), ranked AS (
                SELECT id, next_attempt_at, skipped_gap,
                       row_number() OVER (PARTITION BY endpoint_id ORDER BY next_attempt_at, id) AS turn
                  FROM eligible
            ), due AS (
                -- Locking rechecks the row as it is now: another notifier may have claimed it
                -- meanwhile, or a late predecessor's queueing made it wait (at 'infinity').
                SELECT d.id, r.skipped_gap FROM deliveries d JOIN ranked r ON r.id = d.id
                 WHERE r.turn <= \(perEndpoint) AND d.status = 'pending' AND d.next_attempt_at <= now()
                   AND (d.leased_until IS NULL OR d.leased_until <= now())
                 ORDER BY r.next_attempt_at, d.id
                 LIMIT \(limit)
                 FOR UPDATE OF d SKIP LOCKED
            )
            UPDATE deliveries d
               SET attempts = d.attempts + 1, lease_owner = \(owner),
                   leased_until = now() + make_interval(secs => \(lease.seconds)),
                   next_attempt_at = 'infinity'
              FROM due, webhook_endpoints e
             WHERE d.id = due.id AND e.id = d.endpoint_id
            RETURNING d.id, d.endpoint_id, d.project_id, e.url,
                      ARRAY(SELECT s.sealed FROM webhook_secrets s
                             WHERE s.endpoint_id = e.id AND (s.expires_at IS NULL OR s.expires_at > now())
                             ORDER BY s.id DESC),
                      d.event_id, d.device_id,
                      COALESCE(d.sequence, 0), \(unescaped: Self.payloadOf("d")), d.attempts, due.skipped_gap, d.created_at,
                      d.fix_accepted_at
            """
    }

    /// Whether another pending delivery of the device and endpoint of the delivery row `alias`
    /// is in flight (leased): one sent past the gap hold before its late predecessor came.
    ///
    /// Claims do not look for one (it reads every pending delivery of the device); instead
    /// what lets a waiting delivery go checks this and leaves it at 'infinity': queueing (in
    /// its own form, for deliveries not yet rows), the mend pass (`mendWaitingHeads`), an
    /// endpoint's enabling (`releaseWaitingHeads`), and a replay. Recording needs no check: what it lets go is
    /// the delivery that was out, retried, or the device's next once it is done.
    static func anotherOfItsDeviceInFlight(_ alias: String) -> String {
        """
        EXISTS (SELECT 1 FROM deliveries q
                 WHERE q.endpoint_id = \(alias).endpoint_id AND q.device_id = \(alias).device_id
                   AND q.status = 'pending' AND q.id <> \(alias).id AND q.leased_until > now())
        """
    }

    /// The body of the event of the delivery row `alias`, kept once for all its endpoints
    /// (NULL if it were not kept).
    static func payloadOf(_ alias: String) -> String {
        "(SELECT b.payload FROM event_payloads b WHERE b.project_id = \(alias).project_id AND b.event_id = \(alias).event_id)"
    }

    /// A claimed delivery as a claim returns it: (id, endpoint, project, url, sealed secrets,
    /// event id, device, sequence or 0, payload, attempts, skipped gap, queued at, fix accepted at),
    /// the first columns of its row (a statement may return more after them).
    struct ClaimedRow {
        var id: Int64
        var endpointId: String
        var projectId: String
        var url: String
        var sealedSecrets: [String]
        var eventId: String
        var deviceId: String
        var sequence: Int
        /// Nil when the event's body is not kept (never for a delivery not erased).
        var payload: String?
        var attempts: Int
        var skippedGap: Bool
        var queuedAt: Date
        var fixAcceptedAt: Date?

        /// How many columns it takes.
        static let columnCount = 13

        init(_ row: PostgresRow) throws {
            (
                id, endpointId, projectId, url, sealedSecrets, eventId, deviceId, sequence, payload, attempts, skippedGap,
                queuedAt, fixAcceptedAt
            ) = try row.decode((Int64, String, String, String, [String], String, String, Int, String?, Int, Bool, Date, Date?).self)
        }
    }

    /// Claimed deliveries as rows of `ClaimedRow`, with their secrets opened. Those whose
    /// secret cannot be opened come back apart, for the caller to record as retries
    /// (`recordUnsigned`) once its transaction has committed.
    private func openAttempts(_ rows: PostgresRowSequence) async throws -> (opened: [DeliveryAttempt], unsigned: [DeliveryResult]) {
        var claimed: [ClaimedRow] = []
        for try await row in rows { claimed.append(try ClaimedRow(row)) }
        return try openedAttempts(claimed)
    }

    private func openedAttempts(_ claimed: [ClaimedRow]) throws -> (opened: [DeliveryAttempt], unsigned: [DeliveryResult]) {
        var result: [DeliveryAttempt] = []
        var unsigned: [DeliveryResult] = []
        for row in claimed {
            guard let payload = row.payload else {
                // Cannot happen while its delivery exists; were it so, the delivery fails
                // (replayable) instead of failing every claim that takes it.
                unsigned.append(
                    DeliveryResult(
                        deliveryId: row.id, attempt: row.attempts, startedAt: Date(), latency: .zero, statusCode: nil,
                        error: "not sent: its event's payload is not kept", outcome: .failed))
                continue
            }
            let opened: [String]
            do {
                opened = try openSecrets(row.sealedSecrets)
            } catch {
                unsigned.append(
                    DeliveryResult(
                        deliveryId: row.id, attempt: row.attempts, startedAt: Date(), latency: .zero, statusCode: nil,
                        error: "not sent: \(error)", outcome: .retry(after: Self.unsignableRetryDelay)))
                continue
            }
            result.append(
                DeliveryAttempt(
                    id: row.id, endpointId: row.endpointId, projectId: row.projectId, url: row.url, secrets: opened,
                    eventId: row.eventId, deviceId: row.deviceId, sequence: row.sequence == 0 ? nil : row.sequence,
                    payload: payload, attempt: row.attempts, skippedGap: row.skippedGap, queuedAt: row.queuedAt,
                    fixAcceptedAt: row.fixAcceptedAt))
        }
        return (result, unsigned)
    }

    private func recordUnsigned(_ unsigned: [DeliveryResult], owner: String) async throws {
        guard !unsigned.isEmpty else { return }
        logger.error(
            "deliveries not sent: their endpoint's secret cannot be opened with CHECKIN_SECRET_KEY, or their payload is not kept",
            metadata: ["deliveries": "\(unsigned.count)", "error": "\(unsigned[0].error ?? "")"])
        try await record(unsigned, owner: owner)
    }

    /// How long a delivery whose endpoint secret cannot be opened (sealed under another key)
    /// waits before it is tried again: until an operator starts the notifier with that key.
    static let unsignableRetryDelay: Duration = .seconds(300)

    /// Keeps `owner`'s claims alive while their attempts run, and records that `owner`
    /// renews them (until `lease` from now), whether it holds any or not.
    ///
    /// A claimed delivery waits at 'infinity', out of the due order, for as long as it is leased,
    /// so a renewal writes the lease alone: no column of an index changes, and Postgres
    /// updates the row in its page without touching the indexes (a heap-only update), as
    /// it does when a result claims the device's next delivery (`record`). The claims of a
    /// notifier that stops renewing are made due again by `releaseLapsedLeases`.
    public func renewLeases(ids: [Int64], owner: String, lease: Duration) async throws {
        try await database.withTransaction(settings: Self.renewalSettings) { connection in
            try await connection.perform(Self.renewalStatement(ids: ids, owner: owner, lease: lease), logger: logger)
        }
    }

    /// Set for the renewal alone: the leases it renews are written one lookup a lease, in
    /// the order they were locked, never by hashing the whole table against them (the
    /// planner's pick for a few thousand leases while the table is small).
    static let renewalSettings = ["enable_hashjoin = off", "enable_mergejoin = off"]

    /// The statement of `renewLeases`, on its own so that its plan can be checked (with
    /// `renewalSettings`): each lease locked (see `recordLockStatement`), then written.
    static func renewalStatement(ids: [Int64], owner: String, lease: Duration) -> PostgresQuery {
        """
        WITH renewed AS (
            INSERT INTO notifier_leases (owner, renewed_until)
            VALUES (\(owner), now() + make_interval(secs => \(lease.seconds)))
            ON CONFLICT (owner) DO UPDATE SET renewed_until = EXCLUDED.renewed_until
        ), held AS (
            SELECT l.id FROM (SELECT id FROM UNNEST(\(ids)::bigint[]) AS k(id) ORDER BY id) k
             CROSS JOIN LATERAL (
                 SELECT d.id FROM deliveries d WHERE d.id = k.id AND d.lease_owner = \(owner) FOR NO KEY UPDATE OF d) l
        )
        UPDATE deliveries d SET leased_until = now() + make_interval(secs => \(lease.seconds))
          FROM held WHERE d.id = held.id
        """
    }

    /// Makes due again the claims of the notifiers that stopped renewing (their renewal ran
    /// out) once their leases have run out, as the mend pass does (`releaseWaitingHeads`:
    /// each device's first pending delivery that waits at 'infinity' with no live lease),
    /// reading every pending delivery at once.
    /// A notifier is forgotten `lease` after its renewal ran out, when every claim it made
    /// has run out too. Returns how many deliveries it made due.
    ///
    /// While every notifier renews, it reads one small table and nothing else: reading every
    /// pending delivery every third of a lease would cost more than the heap-only renewals
    /// save under a backlog. A lease that runs out while its notifier still renews (which
    /// renews every claim it holds) waits for the mend pass's sweep to reach its device.
    @discardableResult
    public func releaseLapsedLeases(lease: Duration, gapHold: Duration) async throws -> Int {
        // The forgotten ones are among those stopped: their claims are let go one last time.
        let stopped = try await database.client.query(
            """
            WITH forgotten AS (
                DELETE FROM notifier_leases WHERE renewed_until <= now() - make_interval(secs => \(lease.seconds))
            )
            SELECT count(*)::int FROM notifier_leases WHERE renewed_until <= now()
            """, logger: logger)
        var anyStopped = false
        for try await count in stopped.decode(Int.self) { anyStopped = count > 0 }
        guard anyStopped else { return 0 }
        return try await releaseWaitingHeads(gapHold: gapHold)
    }

    /// Forgets `owner`'s renewals: it stopped holding claims (a graceful shutdown), so the
    /// lease pass need not look for them.
    public func stopRenewing(owner: String) async throws {
        try await database.client.perform("DELETE FROM notifier_leases WHERE owner = \(owner)", logger: logger)
    }

    /// Gives back claims that were never attempted (shutdown, endpoint disabled meanwhile):
    /// due again at once, without the attempt they were charged.
    public func releaseLeases(ids: [Int64], owner: String) async throws {
        guard !ids.isEmpty else { return }
        try await database.client.perform(
            """
            UPDATE deliveries SET attempts = GREATEST(attempts - 1, 0), lease_owner = NULL, leased_until = NULL,
                                  next_attempt_at = now()
             WHERE id = ANY(\(ids)::bigint[]) AND lease_owner = \(owner)
            """, logger: logger)
    }

    /// Records the results of many attempts in one transaction: each delivery's new status
    /// (only while `owner` still holds it) and each attempt in the attempt log, the one that
    /// finished its delivery on the delivery's own row (most deliveries take one attempt:
    /// they then cost no row of the log).
    ///
    /// A delivery done lets the device's next one go. With `chainLease`, a next one that is
    /// the done one's immediate successor (so no gap can be behind it) is claimed for `owner`
    /// and returned, ready to send: a device's stream costs one row update per delivery
    /// instead of a release and a claim. Others are only made due.
    ///
    /// The successors are looked for in a second statement, which sees what was queued
    /// while the first ran: a delivery queued behind one being recorded is either let go
    /// here or judged by its queueing after this commits (see `enqueue`).
    ///
    /// A next one whose predecessor is missing (not queued yet: it comes from the other event
    /// topic) is due once `gapHold` has passed since it was queued, not before: until then
    /// it would only stand in the claims' way.
    @discardableResult
    public func record(
        _ results: [DeliveryResult], owner: String, chainLease: Duration? = nil, gapHold: Duration = .zero
    ) async throws -> [DeliveryAttempt] {
        guard !results.isEmpty else { return [] }
        // Rows are locked in id order, as `renewLeases` and `enqueue` lock them, so that they never deadlock.
        let sorted = results.sorted { $0.deliveryId < $1.deliveryId }
        let chain = chainLease != nil
        let lease = chainLease?.seconds ?? 0
        let (claimed, unsigned) = try await database.withTransaction { connection in
            // Locked first: none can go before this commits, and one deleted meanwhile (its
            // endpoint removed) is not among them, so no attempt is logged for a delivery that
            // is gone (which would fail the whole batch).
            let locked = try await connection.query(Self.recordLockStatement(ids: sorted.map(\.deliveryId)), logger: logger)
            var present: Set<Int64> = []
            for try await id in locked.decode(Int64.self) { present.insert(id) }
            let found = sorted.filter { present.contains($0.deliveryId) }
            guard !found.isEmpty else { return ([DeliveryAttempt](), [DeliveryResult]()) }
            let ids = found.map(\.deliveryId)
            let statuses = found.map { result -> String in
                switch result.outcome {
                case .delivered: DeliveryStatus.delivered.rawValue
                case .retry: DeliveryStatus.pending.rawValue
                case .failed: DeliveryStatus.failed.rawValue
                }
            }
            let delays = found.map { result -> Double in
                if case .retry(let after) = result.outcome { return after.seconds }
                return 0
            }
            let updated = try await connection.query(
                """
                WITH r AS (
                    SELECT * FROM UNNEST(\(ids)::bigint[], \(statuses)::text[],
                                         \(found.map { $0.statusCode ?? 0 })::bigint[], \(found.map { $0.error ?? "" })::text[],
                                         \(delays)::float8[], \(found.map(\.attempt))::bigint[],
                                         \(found.map(\.startedAt))::timestamptz[],
                                         \(found.map { $0.latency.seconds * 1000 })::float8[])
                           AS r(id, status, code, error, delay, attempt, started_at, latency_ms)
                ), updated AS (
                    UPDATE deliveries d
                       SET status = r.status, last_status_code = NULLIF(r.code, 0), last_error = NULLIF(r.error, ''),
                           next_attempt_at = CASE WHEN r.status = 'pending'
                                                  THEN now() + make_interval(secs => r.delay) ELSE d.next_attempt_at END,
                           delivered_at = CASE WHEN r.status = 'delivered' THEN now() ELSE d.delivered_at END,
                           -- The attempt that finished it stays on its row (its code and error are the last ones).
                           finishing_attempt_started_at = CASE WHEN r.status = 'pending' THEN NULL ELSE r.started_at END,
                           finishing_attempt_latency_ms = CASE WHEN r.status = 'pending' THEN NULL ELSE r.latency_ms END,
                           lease_owner = NULL, leased_until = NULL
                      FROM r
                     WHERE d.id = r.id AND d.lease_owner = \(owner)
                    RETURNING d.id, d.status = 'pending' AS retrying
                ), logged AS (
                    -- The others in the attempt log: retried, or recorded after their lease ran out.
                    -- An attempt counts in the round begun by the delivery's latest replay.
                    INSERT INTO delivery_attempts (delivery_id, round, attempt, started_at, latency_ms, status_code, error)
                    SELECT r.id, (SELECT count(*) + 1 FROM delivery_replays p WHERE p.delivery_id = r.id), r.attempt,
                           r.started_at, r.latency_ms, NULLIF(r.code, 0), NULLIF(r.error, '')
                      FROM r
                     WHERE NOT EXISTS (SELECT 1 FROM updated u WHERE u.id = r.id AND NOT u.retrying)
                )
                SELECT id, retrying FROM updated
                """, logger: logger)
            var finished: [Int64] = []
            var retrying: [Int64] = []
            for try await (id, isRetrying) in updated.decode((Int64, Bool).self) {
                if isRetrying { retrying.append(id) } else { finished.append(id) }
            }
            guard !finished.isEmpty || !retrying.isEmpty else { return ([DeliveryAttempt](), [DeliveryResult]()) }
            // Most devices have nothing queued behind a delivery when it is done: a look, with the
            // same fresh view the statement below would have, spares planning that statement.
            if retrying.isEmpty {
                let waiting = try await connection.query(Self.waitingStatement(behind: finished), logger: logger)
                var anyWaiting = false
                for try await exists in waiting.decode(Bool.self) { anyWaiting = exists }
                guard anyWaiting else { return ([DeliveryAttempt](), [DeliveryResult]()) }
            }
            let rows = try await connection.query(
                """
                WITH finished AS (
                    SELECT d.id, d.endpoint_id, d.device_id, d.sequence FROM deliveries d WHERE d.id = ANY(\(finished)::bigint[])
                ), successors AS (
                    -- A device's delivery done: the one behind it may go. Taken at once when it is the
                    -- very next of the sequence; otherwise due, and the claim judges its gap.
                    SELECT p.id, \(chain) AND p.sequence = u.sequence + 1 AS taken,
                           COALESCE(p.sequence > 1, false) AND p.sequence <> u.sequence + 1
                               AND (SELECT true FROM deliveries q
                                     WHERE q.endpoint_id = u.endpoint_id AND q.device_id = u.device_id
                                       AND q.sequence = p.sequence - 1 LIMIT 1) IS NULL AS gap
                      FROM finished u
                      CROSS JOIN LATERAL (
                          SELECT p.id, p.sequence FROM deliveries p
                           WHERE p.endpoint_id = u.endpoint_id AND p.device_id = u.device_id AND p.status = 'pending'
                           ORDER BY p.sequence NULLS FIRST, p.id LIMIT 1) p
                ), next_ones AS (
                    UPDATE deliveries n
                       SET next_attempt_at = CASE WHEN s.taken THEN 'infinity'::timestamptz
                                                  WHEN s.gap THEN GREATEST(now(), n.created_at + make_interval(secs => \(gapHold.seconds)))
                                                  ELSE now() END,
                           attempts = CASE WHEN s.taken THEN n.attempts + 1 ELSE n.attempts END,
                           lease_owner = CASE WHEN s.taken THEN \(owner) ELSE n.lease_owner END,
                           leased_until = CASE WHEN s.taken THEN now() + make_interval(secs => \(lease)) ELSE n.leased_until END
                      FROM successors s
                     WHERE n.id = s.id
                       AND n.next_attempt_at = 'infinity'
                       AND EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.id = n.endpoint_id AND e.enabled)
                    RETURNING n.id, n.endpoint_id, n.project_id, n.event_id, n.device_id, n.sequence, n.attempts,
                              n.created_at, n.fix_accepted_at, s.taken
                ), held_back AS (
                    -- A device's delivery to retry: the ones behind it wait with it (any let out of
                    -- order, after a gap, go back to waiting), so claims meanwhile do not read them.
                    UPDATE deliveries l SET next_attempt_at = 'infinity'
                      FROM deliveries u
                     WHERE u.id = ANY(\(retrying)::bigint[])
                       AND l.endpoint_id = u.endpoint_id AND l.device_id = u.device_id AND l.status = 'pending'
                       AND l.id <> u.id
                       AND (COALESCE(l.sequence, 0), l.id) > (COALESCE(u.sequence, 0), u.id)
                       AND l.next_attempt_at < 'infinity' AND (l.leased_until IS NULL OR l.leased_until <= now())
                    RETURNING l.id
                )
                SELECT t.id, t.endpoint_id, t.project_id, e.url,
                       ARRAY(SELECT s.sealed FROM webhook_secrets s
                              WHERE s.endpoint_id = e.id AND (s.expires_at IS NULL OR s.expires_at > now())
                              ORDER BY s.id DESC),
                       t.event_id, t.device_id, COALESCE(t.sequence, 0), \(unescaped: Self.payloadOf("t")), t.attempts, false,
                       t.created_at,
                       t.fix_accepted_at
                  FROM next_ones t JOIN webhook_endpoints e ON e.id = t.endpoint_id
                 WHERE t.taken
                """, logger: logger)
            return try await openAttempts(rows)
        }
        // Their rows were locked by the transaction until it committed.
        try await recordUnsigned(unsigned, owner: owner)
        return claimed
    }

    /// The statement of `record` that locks the deliveries whose results it writes, in id
    /// order, on its own so that its plan can be checked.
    ///
    /// Each is locked by its own key, one lookup an id in id order (a locking subquery is
    /// never merged into a join, so the planner cannot read the table instead), as the renewal
    /// of leases and the queueing's lock of pending ones do too. An index scan for
    /// `id = ANY(ids)` sorts all the ids again for each row it must recheck because another
    /// transaction changed the row since the statement began: a recording meeting a renewal
    /// of the same leases (and a queueing meeting a recording) rechecked most of a batch, and
    /// so cost as many sorts of the batch's ids as it had ids (3.3 s to lock 8,000 rows
    /// after a concurrent update, against 0.2 s one id at a time).
    static func recordLockStatement(ids: [Int64]) -> PostgresQuery {
        """
        SELECT l.id FROM (SELECT id FROM UNNEST(\(ids)::bigint[]) AS k(id) ORDER BY id) k
         CROSS JOIN LATERAL (SELECT d.id FROM deliveries d WHERE d.id = k.id FOR NO KEY UPDATE OF d) l
        """
    }

    /// Whether any of these deliveries' devices has a pending delivery to the same endpoint
    /// (`record`'s look before it lets successors go), on its own so that its plan can be
    /// checked: one probe of the pending-heads index a delivery, whatever the planner thinks
    /// of the table (a join of the two was planned as a scan of every pending delivery once
    /// the rows were small).
    static func waitingStatement(behind finished: [Int64]) -> PostgresQuery {
        """
        SELECT EXISTS (SELECT 1 FROM deliveries d
                        CROSS JOIN LATERAL (
                            SELECT 1 FROM deliveries n
                             WHERE n.endpoint_id = d.endpoint_id AND n.device_id = d.device_id AND n.status = 'pending'
                             LIMIT 1) n
                        WHERE d.id = ANY(\(finished)::bigint[]))
        """
    }

    /// Keeps the deliveries of disabled endpoints out of the due ones (due at 'infinity'):
    /// disabling does this as it goes, and this pass mends what raced with it (an attempt
    /// recorded as a retry after a 410). Returns how many deliveries it parked.
    @discardableResult
    public func parkDisabledDeliveries() async throws -> Int {
        let rows = try await database.client.query(Self.parkingStatement, logger: logger)
        var count = 0
        for try await _ in rows { count += 1 }
        return count
    }

    /// The statement of `parkDisabledDeliveries`, on its own so that what it reads can be
    /// measured. It reads the scheduled deliveries of the disabled endpoints alone, each
    /// endpoint's a range of the due order (which is by endpoint): nothing when every endpoint
    /// is enabled, and nothing of what a disabled endpoint's earlier passes parked already.
    static let parkingStatement: PostgresQuery = """
        UPDATE deliveries d SET next_attempt_at = 'infinity'
         WHERE d.endpoint_id = ANY(ARRAY(SELECT e.id FROM webhook_endpoints e WHERE NOT e.enabled))
           AND d.status = 'pending' AND d.next_attempt_at < 'infinity'
           AND (d.leased_until IS NULL OR d.leased_until <= now())
        RETURNING d.id
        """

    /// Where a sweep of the waiting heads goes on: with the devices after this one, in the
    /// order of the pending-heads index (endpoint, then device).
    public struct HeadsSweepPosition: Sendable, Equatable {
        public var endpointId: String
        public var deviceId: String

        public init(endpointId: String, deviceId: String) {
            self.endpointId = endpointId
            self.deviceId = deviceId
        }
    }

    /// One step of the mend pass over the queue: lets each device's first pending delivery
    /// go where it waits at 'infinity' although nothing is ahead of it (queueing and
    /// recording do this as they go; this mends what raced with them, such as a delivery
    /// queued behind one that was being recorded as delivered), for the devices after
    /// `position`, reading at most `limit` pending deliveries. Returns how many it let go and
    /// where the next step goes on (nil once it reached the end: from the first device again).
    ///
    /// A step costs what it reads, not what is pending: a partner's backlog of a million
    /// deliveries is swept a step at a time instead of read whole on every pass.
    public func mendWaitingHeads(after position: HeadsSweepPosition?, reading limit: Int, gapHold: Duration = .zero)
        async throws -> (released: Int, next: HeadsSweepPosition?)
    {
        try await Self.sweepStep(
            database.client.query(Self.waitingHeadsSweepStatement(after: position, limit: limit, gapHold: gapHold), logger: logger),
            reading: limit)
    }

    /// What a step of a sweep over the pending deliveries answered (how many it changed, how
    /// many it read, the last device read): how many it changed, and where the next step goes
    /// on (nil once a step read fewer than it could: the sweep reached the end).
    static func sweepStep(_ rows: PostgresRowSequence, reading limit: Int) async throws -> (Int, HeadsSweepPosition?) {
        for try await (changed, scanned, endpointId, deviceId) in rows.decode((Int, Int, String?, String?).self) {
            guard scanned >= limit, let endpointId, let deviceId else { return (changed, nil) }
            return (changed, HeadsSweepPosition(endpointId: endpointId, deviceId: deviceId))
        }
        return (0, nil)
    }

    /// The statement of `mendWaitingHeads`, on its own so that what it reads can be measured.
    /// It returns how many it let go, how many pending deliveries it read, and the last
    /// device read.
    ///
    /// The step starts at a device, never inside one: the first delivery it reads of each
    /// device is that device's first pending one, its head. The last device read may have
    /// more deliveries beyond the step; its head was read, and the next step starts after it.
    static func waitingHeadsSweepStatement(after position: HeadsSweepPosition?, limit: Int, gapHold: Duration)
        -> PostgresQuery
    {
        // Every endpoint id is longer than '': ('', '') is before the first device.
        let (afterEndpoint, afterDevice) = (position?.endpointId ?? "", position?.deviceId ?? "")
        return """
            WITH scanned AS (
                SELECT p.id, p.endpoint_id, p.device_id, p.sequence
                  FROM deliveries p
                 WHERE p.status = 'pending' AND (p.endpoint_id, p.device_id) > (\(afterEndpoint), \(afterDevice))
                 ORDER BY p.endpoint_id, p.device_id, p.sequence NULLS FIRST, p.id
                 LIMIT \(limit)
            ), heads AS (
                SELECT DISTINCT ON (s.endpoint_id, s.device_id) s.id
                  FROM scanned s
                 ORDER BY s.endpoint_id, s.device_id, s.sequence NULLS FIRST, s.id
            ), released AS (
                UPDATE deliveries d SET next_attempt_at = \(unescaped: Self.headDueAt("d", gapHold: gapHold))
                  FROM heads
                 WHERE d.id = heads.id AND d.status = 'pending' AND d.next_attempt_at = 'infinity'
                   AND (d.leased_until IS NULL OR d.leased_until <= now())
                   AND EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.id = d.endpoint_id AND e.enabled)
                   -- Not while a later one of its device is in flight: its recording lets this one go.
                   AND NOT \(unescaped: Self.anotherOfItsDeviceInFlight("d"))
                RETURNING d.id
            ), last_read AS (
                SELECT s.endpoint_id, s.device_id FROM scanned s ORDER BY s.endpoint_id DESC, s.device_id DESC LIMIT 1
            )
            SELECT (SELECT count(*) FROM released)::int8, (SELECT count(*) FROM scanned)::int8,
                   (SELECT endpoint_id FROM last_read), (SELECT device_id FROM last_read)
            """
    }

    /// When the delivery row `alias`, let go as its device's first pending one, is due: now,
    /// or once `gapHold` has passed since it was queued if its predecessor is not queued.
    static func headDueAt(_ alias: String, gapHold: Duration) -> String {
        """
        CASE WHEN COALESCE(\(alias).sequence > 1, false) AND (
                  SELECT true FROM deliveries q
                   WHERE q.endpoint_id = \(alias).endpoint_id AND q.device_id = \(alias).device_id
                     AND q.sequence = \(alias).sequence - 1 LIMIT 1) IS NULL
             THEN GREATEST(now(), \(alias).created_at + make_interval(secs => \(gapHold.seconds)))
             ELSE now() END
        """
    }

    /// Lets each device's first pending delivery go where it waits at 'infinity' although
    /// nothing is ahead of it, for the enabled endpoints (or the one given). Reads every
    /// pending delivery of those endpoints once: for an endpoint enabled again, and for the
    /// claims of a notifier that stopped; the periodic mend goes a step at a time
    /// (`mendWaitingHeads`).
    ///
    /// A head whose predecessor is missing is due once `gapHold` has passed since it was queued.
    @discardableResult
    public func releaseWaitingHeads(endpointId: String? = nil, gapHold: Duration = .zero) async throws -> Int {
        let rows = try await database.client.query(
            Self.waitingHeadsStatement(endpointId: endpointId, gapHold: gapHold), logger: logger)
        var count = 0
        for try await _ in rows { count += 1 }
        return count
    }

    /// The statement of `releaseWaitingHeads`, on its own so that what it reads can be measured.
    static func waitingHeadsStatement(endpointId: String?, gapHold: Duration) -> PostgresQuery {
        """
        UPDATE deliveries d SET next_attempt_at = \(unescaped: Self.headDueAt("d", gapHold: gapHold))
          FROM (SELECT DISTINCT ON (p.endpoint_id, p.device_id) p.id, p.next_attempt_at
                  FROM deliveries p JOIN webhook_endpoints e ON e.id = p.endpoint_id
                 WHERE p.status = 'pending' AND e.enabled AND (\(endpointId ?? "") = '' OR e.id = \(endpointId ?? ""))
                 ORDER BY p.endpoint_id, p.device_id, p.sequence NULLS FIRST, p.id) heads
         WHERE d.id = heads.id AND heads.next_attempt_at = 'infinity'
           AND (d.leased_until IS NULL OR d.leased_until <= now())
           -- Not while a later one of its device is in flight: its recording lets this one go.
           AND NOT \(unescaped: Self.anotherOfItsDeviceInFlight("d"))
        RETURNING d.id
        """
    }

    /// Deliveries of disabled endpoints whose retries ran out meanwhile (queued longer than
    /// `retryWindow`, the time all their attempts would have taken) become `failed`,
    /// replayable: every disabled endpoint swept to its end, step after step.
    @discardableResult
    public func failExpiredWhileDisabled(retryWindow: Duration, reading limit: Int = 5_000) async throws -> Int {
        var failed = 0
        var position: HeadsSweepPosition?
        repeat {
            let step = try await failExpiredWhileDisabled(retryWindow: retryWindow, after: position, reading: limit)
            failed += step.failed
            position = step.next
        } while position != nil
        return failed
    }

    /// One step of that sweep: the pending deliveries of the disabled endpoints after
    /// `position` (in endpoint and device order), at most `limit` of them, those queued longer
    /// than `retryWindow` ago failed. Returns how many it failed and where the next step goes
    /// on (nil once it reached the end). A step costs what it reads, so a disabled endpoint's
    /// backlog of any size is swept a step at a time instead of read whole on every pass.
    public func failExpiredWhileDisabled(retryWindow: Duration, after position: HeadsSweepPosition?, reading limit: Int)
        async throws -> (failed: Int, next: HeadsSweepPosition?)
    {
        try await Self.sweepStep(
            database.client.query(Self.expiringStatement(retryWindow: retryWindow, after: position, limit: limit), logger: logger),
            reading: limit)
    }

    /// The statement of a step of `failExpiredWhileDisabled`, on its own so that what it reads
    /// can be measured: the disabled endpoints in id order, each one's pending deliveries a
    /// range of the pending-heads index from the step's position, read until the step is full.
    /// It returns how many it failed, how many it read, and the last device read (whose
    /// deliveries beyond the step wait for the next sweep).
    static func expiringStatement(retryWindow: Duration, after position: HeadsSweepPosition? = nil, limit: Int = 5_000)
        -> PostgresQuery
    {
        // Every endpoint id is longer than '': ('', '') is before the first device.
        let (afterEndpoint, afterDevice) = (position?.endpointId ?? "", position?.deviceId ?? "")
        return """
            WITH scanned AS (
                SELECT p.id, p.endpoint_id, p.device_id, p.created_at
                  FROM (SELECT e.id FROM webhook_endpoints e WHERE NOT e.enabled AND e.id >= \(afterEndpoint) ORDER BY e.id) e
                 CROSS JOIN LATERAL (
                     SELECT p.id, p.endpoint_id, p.device_id, p.created_at FROM deliveries p
                      WHERE p.endpoint_id = e.id AND p.status = 'pending'
                        AND (p.endpoint_id, p.device_id) > (\(afterEndpoint), \(afterDevice))
                      ORDER BY p.endpoint_id, p.device_id, p.sequence NULLS FIRST, p.id
                      LIMIT \(limit)) p
                 LIMIT \(limit)
            ), failed AS (
                UPDATE deliveries d
                   SET status = 'failed', last_error = 'retries ran out while the endpoint was disabled',
                       lease_owner = NULL, leased_until = NULL
                  FROM scanned s
                 WHERE d.id = s.id AND d.status = 'pending'
                   AND s.created_at <= now() - make_interval(secs => \(retryWindow.seconds))
                RETURNING d.id
            ), last_read AS (
                SELECT s.endpoint_id, s.device_id FROM scanned s ORDER BY s.endpoint_id DESC, s.device_id DESC LIMIT 1
            )
            SELECT (SELECT count(*) FROM failed)::int8, (SELECT count(*) FROM scanned)::int8,
                   (SELECT endpoint_id FROM last_read), (SELECT device_id FROM last_read)
            """
    }

    /// A page of the project's deliveries, newest first: `limit` of them older than `cursor`
    /// (a page's `nextCursor`, the id of its last delivery).
    public func deliveries(
        projectId: String, filter: DeliveryListFilter?, before cursor: Int64?, limit: Int
    ) async throws -> DeliveryPage {
        let rows = try await database.client.query(
            Self.pageStatement(projectId: projectId, filter: filter, before: cursor, limit: limit), logger: logger)
        var result: [DeliveryRecord] = []
        for try await row in rows { result.append(try DeliveryRecord(row: row)) }
        let more = result.count > limit
        if more { result.removeLast() }
        return DeliveryPage(deliveries: result, nextCursor: more ? result.last?.id : nil)
    }

    /// The statement of `deliveries`, on its own so that what it reads can be measured: one
    /// more than `limit`, to tell whether another page follows.
    ///
    /// The page is a range of the project's index (project, id), read newest first from the
    /// cursor, so that it costs what it returns and no other project's delivery is read. It
    /// is written as a range of (project, id) pairs, not `project_id = …`: given the project as
    /// an equality, the planner served `ORDER BY id` from the table's own ids instead, newest
    /// first, passing over every newer delivery of the other projects (it takes a project's
    /// deliveries to be spread evenly among theirs), which a quiet tenant beside a busy one pays
    /// on every page.
    ///
    /// The status is written into the statement, not bound, so that the planner sees it: a
    /// page of failed deliveries is then a range of the index of the project's failed ones
    /// (few, and old among the delivered), not of its whole history.
    static func pageStatement(projectId: String, filter: DeliveryListFilter?, before cursor: Int64?, limit: Int)
        -> PostgresQuery
    {
        let condition: String =
            switch filter {
            case .none: "true"
            case .status(let status): "status = '\(status.rawValue)'"
            case .retrying: "status = '\(DeliveryStatus.pending.rawValue)' AND attempts > 0"
            }
        return """
            SELECT \(unescaped: DeliveryRecord.columns)
            FROM deliveries
            WHERE (project_id, id) > (\(projectId), 0) AND (project_id, id) < (\(projectId), \(cursor ?? Int64.max))
              AND \(unescaped: condition)
            ORDER BY project_id DESC, id DESC LIMIT \(limit + 1)
            """
    }

    /// One delivery of the project with its endpoint, payload, what it waits for, replays and
    /// attempt log; nil if the project has no such delivery.
    public func delivery(id: Int64, projectId: String) async throws -> DeliveryDetail? {
        let rows = try await database.client.query(
            """
            SELECT \(unescaped: DeliveryRecord.columns), e.url, e.enabled, d.erased_at IS NULL, \(unescaped: Self.payloadOf("d")),
                   d.leased_until > now(),
                   -- A claim whose lease ran out waits at 'infinity' until a pass makes it due
                   -- (`releaseLapsedLeases`, `releaseWaitingHeads`): due since its lease ended,
                   -- unless another is ahead.
                   CASE WHEN d.next_attempt_at = 'infinity' AND d.lease_owner IS NOT NULL
                             AND NOT EXISTS (SELECT 1 FROM deliveries p
                                              WHERE p.endpoint_id = d.endpoint_id AND p.device_id = d.device_id
                                                AND p.status = 'pending'
                                                AND (COALESCE(p.sequence, 0), p.id) < (COALESCE(d.sequence, 0), d.id))
                        THEN d.leased_until
                        ELSE NULLIF(d.next_attempt_at, 'infinity') END,
                   d.finishing_attempt_started_at, d.finishing_attempt_latency_ms
              FROM deliveries d
              -- Only the endpoint's url and enabled, so that the delivery's columns stay unambiguous.
              JOIN LATERAL (SELECT url, enabled FROM webhook_endpoints WHERE id = d.endpoint_id) e ON true
             WHERE d.id = \(id) AND d.project_id = \(projectId)
            """, logger: logger)
        var found: DeliveryDetail?
        var finishing: (startedAt: Date, latency: Double)?
        for try await row in rows {
            let record = try DeliveryRecord(row: row)
            let columns = row.makeRandomAccess()
            let (url, enabled, kept, payload) = (
                try columns[12].decode(String.self), try columns[13].decode(Bool.self), try columns[14].decode(Bool.self),
                try columns[15].decode(String?.self)
            )
            // Nil at 'infinity': waiting behind the device's earlier delivery (or a disabled endpoint).
            let (inFlight, next) = (try columns[16].decode(Bool?.self) ?? false, try columns[17].decode(Date?.self))
            if let startedAt = try columns[18].decode(Date?.self), let latency = try columns[19].decode(Double?.self) {
                finishing = (startedAt, latency)
            }
            // In this order: a disabled endpoint's deliveries may wait at 'infinity' or at a
            // time that has passed, and wait for nothing but its enabling either way.
            let waitingFor: DeliveryWait?
            if record.status != .pending {
                waitingFor = nil
            } else if inFlight {
                waitingFor = .attemptInFlight
            } else if !enabled {
                waitingFor = .endpointEnabled
            } else if next == nil {
                waitingFor = .earlierDelivery
            } else {
                waitingFor = .nextAttempt
            }
            found = DeliveryDetail(
                delivery: record, endpointUrl: url, payload: kept ? payload : nil, waitingFor: waitingFor,
                nextAttemptAt: waitingFor == .nextAttempt ? next : nil, replays: [], attemptLog: [])
        }
        guard var found else { return nil }
        let replays = try await database.client.query(
            "SELECT replayed_at FROM delivery_replays WHERE delivery_id = \(id) ORDER BY id", logger: logger)
        for try await replayedAt in replays.decode(Date.self) { found.replays.append(replayedAt) }
        let attempts = try await database.client.query(
            """
            SELECT round, attempt, started_at, latency_ms, status_code, error FROM delivery_attempts
             WHERE delivery_id = \(id) ORDER BY round, id
            """, logger: logger)
        func logged(round: Int, attempt: Int, startedAt: Date, latency: Double, code: Int?, error: String?) -> DeliveryAttemptRecord {
            DeliveryAttemptRecord(
                round: round, attempt: attempt, startedAt: startedAt,
                // To a tenth of a millisecond: the rest is the clock's noise, not the partner's.
                latencyMilliseconds: (latency * 10).rounded() / 10, statusCode: code, error: error)
        }
        for try await (round, attempt, startedAt, latency, code, error) in attempts.decode((Int, Int, Date, Double, Int?, String?).self) {
            found.attemptLog.append(
                logged(round: round, attempt: attempt, startedAt: startedAt, latency: latency, code: code, error: error))
        }
        // The attempt that finished the current round, kept on the delivery's row: the last of its round.
        if let finishing {
            let delivery = found.delivery
            found.attemptLog.append(
                logged(
                    round: found.replays.count + 1, attempt: delivery.attempts, startedAt: finishing.startedAt,
                    latency: finishing.latency, code: delivery.lastStatusCode, error: delivery.lastError))
        }
        return found
    }

    /// Queues deliveries again (after a partner fixed its endpoint), all in one statement, so
    /// that several of one device still go out in `sequence` order.
    ///
    /// Only deliveries that are done can be replayed: delivered or failed. A pending one
    /// (queued, in flight or retrying) goes out anyway, and replaying it would clear a lease
    /// that an attempt on the wire still holds, or make due one that waits behind its device's
    /// earlier deliveries.
    ///
    /// All or none: when any of `deliveryIds` is not a delivery of the project (a typo, another
    /// project's), was erased with its device, or is pending, none is queued again and
    /// `missing`, `erased` or `pending` names those, so that a request half done is never taken
    /// for a request done.
    public func replay(deliveryIds: [Int64], projectId: String) async throws -> ReplayedDeliveries {
        let requested = Array(Set(deliveryIds))
        guard !requested.isEmpty else { return ReplayedDeliveries(ids: [], disabledEndpoints: []) }
        let replayed = try await Self.replayed(
            try await database.client.query(
                """
                WITH found AS (
                    SELECT \(unescaped: Self.replayedColumns) FROM deliveries
                     WHERE id = ANY(\(requested)::bigint[]) AND project_id = \(projectId) AND erased_at IS NULL
                       AND status IN ('delivered', 'failed')
                     ORDER BY id
                       FOR UPDATE
                ), chosen AS (
                    SELECT * FROM found WHERE (SELECT count(*) FROM found) = \(requested.count)
                ), \(unescaped: Self.replayingOfChosen)
                """, logger: logger))
        guard replayed.ids.isEmpty else { return replayed }
        let rows = try await database.client.query(
            """
            SELECT id, erased_at IS NOT NULL, status = 'pending' FROM deliveries
             WHERE id = ANY(\(requested)::bigint[]) AND project_id = \(projectId)
            """, logger: logger)
        var present: Set<Int64> = []
        var erased: [Int64] = []
        var pending: [Int64] = []
        for try await (id, isErased, isPending) in rows.decode((Int64, Bool, Bool).self) {
            present.insert(id)
            if isErased { erased.append(id) } else if isPending { pending.append(id) }
        }
        return ReplayedDeliveries(
            ids: [], disabledEndpoints: [], missing: requested.filter { !present.contains($0) }.sorted(), erased: erased.sorted(),
            pending: pending.sorted())
    }

    /// Queues every failed delivery of the project again (of one endpoint, if given).
    public func replayFailed(projectId: String, endpointId: String? = nil) async throws -> ReplayedDeliveries {
        try await Self.replayed(
            try await database.client.query(Self.replayFailedStatement(projectId: projectId, endpointId: endpointId), logger: logger))
    }

    /// The statement of `replayFailed`, on its own so that what it reads can be measured. The
    /// failed deliveries are found through the project's endpoints in the failed ones' index:
    /// by the project alone, Postgres read that index's entry for every failed delivery of
    /// every project, so that one tenant's week of failures was read again by each replay of
    /// another's.
    static func replayFailedStatement(projectId: String, endpointId: String?) -> PostgresQuery {
        let endpoint = endpointId ?? ""
        return """
            WITH chosen AS (
                SELECT \(unescaped: Self.replayedColumns) FROM deliveries
                 WHERE endpoint_id = ANY(\(endpointIdsOf: projectId)) AND (\(endpoint) = '' OR endpoint_id = \(endpoint))
                   AND project_id = \(projectId) AND status = 'failed'
                 ORDER BY id
                   FOR UPDATE
            ), \(unescaped: Self.replayingOfChosen)
            """
    }

    /// What a replay reads of each delivery it queues again (`chosen`, locked in id order as
    /// `record` locks them, so that the attempt moved below is the one that finished it).
    static let replayedColumns = """
        id, endpoint_id, device_id, sequence, attempts, last_status_code, last_error, finishing_attempt_started_at,
        finishing_attempt_latency_ms
        """

    /// The rest of a replay, after its `chosen` deliveries: the attempt that finished each one's
    /// round moves from its row to the attempt log, then the delivery is pending again, its
    /// attempts counted from 0 in a new round.
    ///
    /// Only a device's head is ever due: a replayed delivery is due now only when it is the
    /// first of its device and endpoint among those replayed together and no earlier one of
    /// its device is pending and none is in flight; the others wait at 'infinity' until
    /// recording lets them go, one at a time. A pending one of the device that is later than
    /// a replayed one, and due, waits again behind it (as queueing does for a late predecessor).
    /// So a replay never puts into the due order a delivery that a claim would have to pass over.
    static let replayingOfChosen = """
        moved AS (
            INSERT INTO delivery_attempts (delivery_id, round, attempt, started_at, latency_ms, status_code, error)
            SELECT c.id, (SELECT count(*) + 1 FROM delivery_replays p WHERE p.delivery_id = c.id), c.attempts,
                   c.finishing_attempt_started_at, c.finishing_attempt_latency_ms, c.last_status_code, c.last_error
              FROM chosen c
             WHERE c.finishing_attempt_started_at IS NOT NULL
        ), turns AS (
            SELECT c.id, row_number() OVER (PARTITION BY c.endpoint_id, c.device_id ORDER BY c.sequence NULLS FIRST, c.id) AS turn
              FROM chosen c
        ), replayed AS (
            UPDATE deliveries d
               SET status = 'pending', attempts = 0, delivered_at = NULL,
                   next_attempt_at = CASE WHEN t.turn > 1 OR \(WebhookStore.anotherOfItsDeviceInFlight("d")) OR EXISTS (
                                               SELECT 1 FROM deliveries h
                                                WHERE h.endpoint_id = d.endpoint_id AND h.device_id = d.device_id
                                                  AND h.status = 'pending' AND h.id <> d.id
                                                  AND COALESCE(h.sequence, 0) < COALESCE(d.sequence, 0))
                                          THEN 'infinity'::timestamptz ELSE now() END,
                   lease_owner = NULL, leased_until = NULL,
                   finishing_attempt_started_at = NULL, finishing_attempt_latency_ms = NULL
              FROM chosen c JOIN turns t ON t.id = c.id
             WHERE d.id = c.id
            RETURNING d.id, d.endpoint_id, d.device_id, d.sequence
        ), behind AS (
            UPDATE deliveries l SET next_attempt_at = 'infinity'
              FROM (SELECT endpoint_id, device_id, min(COALESCE(sequence, 0)) AS sequence FROM replayed
                     GROUP BY endpoint_id, device_id) r
             WHERE l.endpoint_id = r.endpoint_id AND l.device_id = r.device_id AND COALESCE(l.sequence, 0) > r.sequence
               AND l.status = 'pending' AND l.next_attempt_at < 'infinity'
               AND (l.leased_until IS NULL OR l.leased_until <= now())
        ), logged AS (
            INSERT INTO delivery_replays (delivery_id) SELECT id FROM replayed
        )
        SELECT id, endpoint_id, (SELECT enabled FROM webhook_endpoints e WHERE e.id = replayed.endpoint_id)
          FROM replayed
        """

    /// The rows a replay returned: each delivery's id, endpoint and whether that is enabled.
    private static func replayed(_ rows: PostgresRowSequence) async throws -> ReplayedDeliveries {
        var ids: [Int64] = []
        var disabled: Set<String> = []
        for try await (id, endpointId, enabled) in rows.decode((Int64, String, Bool?).self) {
            ids.append(id)
            if enabled == false { disabled.insert(endpointId) }
        }
        return ReplayedDeliveries(ids: ids.sorted(), disabledEndpoints: disabled.sorted())
    }
}

/// Deliveries queued again.
public struct ReplayedDeliveries: Sendable, Equatable {
    public var ids: [Int64]
    /// The disabled endpoints among the deliveries': what is queued for them waits until they
    /// are enabled again, which whoever replays them should be told.
    public var disabledEndpoints: [String]
    /// Deliveries asked for by id that the project does not have; when any are, none was
    /// queued again.
    public var missing: [Int64] = []
    /// Deliveries asked for by id that were erased with their device: their rows are kept
    /// (without the payload), so they cannot be sent again; when any are, none was queued again.
    public var erased: [Int64] = []
    /// Deliveries asked for by id that are still pending (queued, in flight or retrying);
    /// when any are, none was queued again.
    public var pending: [Int64] = []
}
