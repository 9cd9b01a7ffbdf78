import Foundation
import Logging
import PostgresNIO
import Shared

/// Queueing: an event's deliveries come in, each device's first one due, the rest waiting behind it.
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
    package func enqueue(_ deliveries: [NewDelivery], gapHold: Duration = .zero) async throws -> Int {
        try await enqueue(deliveries, gapHold: gapHold, claim: nil).queued
    }

    /// Who takes the deliveries that may go at once as they are queued: at most `limit`, none
    /// of the endpoints in `excluding` (the taker holds enough of theirs already).
    package struct QueueClaim: Sendable {
        package var owner: String
        package var lease: Duration
        package var limit: Int
        package var excluding: [String]

        package init(owner: String, lease: Duration, limit: Int, excluding: [String] = []) {
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
    package func enqueue(_ deliveries: [NewDelivery], gapHold: Duration = .zero, claim: QueueClaim?) async throws
        -> (queued: Int, claimed: [ClaimedDelivery], dueUnclaimed: Int)
    {
        let deliveries = Self.once(deliveries)
        guard !deliveries.isEmpty else { return (0, [], 0) }
        let bodies = EventPayload.bodies(of: deliveries)
        let (queued, due, claimed) = try await database.withTransaction { connection in
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
            var taken: [ClaimedDelivery] = []
            for try await row in rows {
                let columns = row.makeRandomAccess()
                let isDue = try columns[Self.claimedColumnCount].decode(Bool.self)
                let isTaken = try columns[Self.claimedColumnCount + 1].decode(Bool.self)
                inserted += 1
                if isDue { due += 1 }
                if isTaken {
                    var claimed = try ClaimedDelivery(row)
                    claimed.payload = bodies[EventPayload.Key(projectId: claimed.projectId, eventId: claimed.eventId)]
                    taken.append(claimed)
                }
                if isDue, taker.excluding.contains(try columns[1].decode(String.self)) { dueOfExcluded += 1 }
            }
            return (inserted, due - dueOfExcluded, taken)
        }
        return (queued, claimed, due - claimed.count)
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
            -- Each new one in the shape of a claimed row (`ClaimedDelivery`), then whether it is due and taken.
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
}
