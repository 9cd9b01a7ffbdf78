import Foundation
import Logging
import PostgresNIO
import Shared

/// Mending: what no single transition moves (deliveries of disabled endpoints, heads whose
/// predecessor never came, retries that expired while their endpoint was off).
extension WebhookStore {
    /// Keeps the deliveries of disabled endpoints out of the due ones (due at 'infinity'):
    /// disabling does this as it goes, and this pass mends what raced with it (an attempt
    /// recorded as a retry after a 410). Returns how many deliveries it parked.
    @discardableResult
    package func parkDisabledDeliveries() async throws -> Int {
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
    package struct HeadsSweepPosition: Sendable, Equatable {
        package var endpointId: String
        package var deviceId: String

        package init(endpointId: String, deviceId: String) {
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
    package func mendWaitingHeads(after position: HeadsSweepPosition?, reading limit: Int, gapHold: Duration = .zero)
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
    package func releaseWaitingHeads(endpointId: String? = nil, gapHold: Duration = .zero) async throws -> Int {
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
    package func failExpiredWhileDisabled(retryWindow: Duration, reading limit: Int = 5_000) async throws -> Int {
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
    package func failExpiredWhileDisabled(retryWindow: Duration, after position: HeadsSweepPosition?, reading limit: Int)
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
}
