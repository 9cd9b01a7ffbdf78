import Foundation
import Logging
import PostgresNIO
import Shared

/// Recording: an attempt's result, and the device's next delivery let go when one is done.
extension WebhookStore {
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
    package func record(
        _ results: [DeliveryResult], owner: String, chainLease: Duration? = nil, gapHold: Duration = .zero
    ) async throws -> [ClaimedDelivery] {
        guard !results.isEmpty else { return [] }
        // Rows are locked in id order, as `renewLeases` and `enqueue` lock them, so that they never deadlock.
        let sorted = results.sorted { $0.deliveryId < $1.deliveryId }
        let chain = chainLease != nil
        let lease = chainLease?.seconds ?? 0
        return try await database.withTransaction { connection in
            // Locked first: none can go before this commits, and one deleted meanwhile (its
            // endpoint removed) is not among them, so no attempt is logged for a delivery that
            // is gone (which would fail the whole batch).
            let locked = try await connection.query(Self.recordLockStatement(ids: sorted.map(\.deliveryId)), logger: logger)
            var present: Set<Int64> = []
            for try await id in locked.decode(Int64.self) { present.insert(id) }
            let found = sorted.filter { present.contains($0.deliveryId) }
            guard !found.isEmpty else { return [ClaimedDelivery]() }
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
            guard !finished.isEmpty || !retrying.isEmpty else { return [ClaimedDelivery]() }
            // Most devices have nothing queued behind a delivery when it is done: a look, with the
            // same fresh view the statement below would have, spares planning that statement.
            if retrying.isEmpty {
                let waiting = try await connection.query(Self.waitingStatement(behind: finished), logger: logger)
                var anyWaiting = false
                for try await exists in waiting.decode(Bool.self) { anyWaiting = exists }
                guard anyWaiting else { return [ClaimedDelivery]() }
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
            return try await Self.claimed(rows)
        }
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
}
