import Foundation
import Logging
import PostgresNIO
import Shared

/// Claiming: the due deliveries a notifier may send now, leased to it (their secrets still
/// sealed: the notifier opens them).
extension WebhookStore {
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
    package func claimDue(
        limit: Int, perEndpoint: Int, owner: String, lease: Duration, gapHold: Duration, excluding: [String] = []
    ) async throws -> [ClaimedDelivery] {
        try await database.withTransaction(settings: Self.claimSettings) { connection in
            let rows = try await connection.query(
                Self.claimStatement(
                    limit: limit, perEndpoint: perEndpoint, owner: owner, lease: lease, gapHold: gapHold,
                    excluding: excluding),
                logger: logger)
            return try await Self.claimed(rows)
        }
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

    /// The columns a claiming statement returns first, in this order: (id, endpoint, project,
    /// url, sealed secrets, event id, device, sequence or 0, payload, attempts, skipped gap,
    /// queued at, fix accepted at); a statement may return more after them.
    static let claimedColumnCount = 13

    /// Claimed deliveries as their statement returns them (see `claimedColumnCount`).
    static func claimed(_ rows: PostgresRowSequence) async throws -> [ClaimedDelivery] {
        var claimed: [ClaimedDelivery] = []
        for try await row in rows { claimed.append(try ClaimedDelivery(row)) }
        return claimed
    }
}

extension ClaimedDelivery {
    init(_ row: PostgresRow) throws {
        let (
            id, endpointId, projectId, url, sealedSecrets, eventId, deviceId, sequence, payload, attempt, skippedGap,
            queuedAt, fixAcceptedAt
        ) = try row.decode((Int64, String, String, String, [String], String, String, Int, String?, Int, Bool, Date, Date?).self)
        self.init(
            id: id, endpointId: endpointId, projectId: projectId, url: url, sealedSecrets: sealedSecrets, eventId: eventId,
            deviceId: deviceId, sequence: sequence == 0 ? nil : sequence, payload: payload, attempt: attempt,
            skippedGap: skippedGap, queuedAt: queuedAt, fixAcceptedAt: fixAcceptedAt)
    }
}
