import Foundation
import Logging
import PostgresNIO
import Shared

/// Reads and replays: a project's deliveries as the API and the CLI show them, and queueing
/// finished ones again.
extension WebhookStore {
    /// A page of the project's deliveries, newest first: `limit` of them older than `cursor`
    /// (a page's `nextCursor`, the id of its last delivery), of one endpoint and of one device
    /// when given (an endpoint the project does not have: an empty page).
    package func deliveries(
        projectId: String, filter: DeliveryListFilter?, endpointId: String? = nil, deviceId: String? = nil, before cursor: Int64?,
        limit: Int
    ) async throws -> DeliveryPage {
        let rows = try await database.client.query(
            Self.pageStatement(
                projectId: projectId, filter: filter, endpointId: endpointId, deviceId: deviceId, before: cursor, limit: limit),
            logger: logger)
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
    ///
    /// A page of one device is read through the index that keeps each device's deliveries in
    /// order per endpoint (`deliveries_device_order`), for each of the project's endpoints: a
    /// device's deliveries are few, and no index more is written for each delivery queued. One
    /// of an endpoint is a range of the endpoint's index (written as a range for the same
    /// reason as the project's); the other filters are checked on what is read (a device's
    /// deliveries to the project's other endpoints, an endpoint's of another status). An
    /// endpoint's range is read only when the
    /// endpoint is the project's (a check the planner runs once, before the scan), so that
    /// another project's endpoint id reads none of its deliveries.
    static func pageStatement(
        projectId: String, filter: DeliveryListFilter?, endpointId: String? = nil, deviceId: String? = nil, before cursor: Int64?,
        limit: Int
    ) -> PostgresQuery {
        let condition: String =
            switch filter {
            case .none: "true"
            case .status(let status): "status = '\(status.rawValue)'"
            case .retrying: "status = '\(DeliveryStatus.pending.rawValue)' AND attempts > 0"
            }
        let last = cursor ?? Int64.max
        if let deviceId {
            let endpoint = endpointId ?? ""
            return """
                SELECT \(unescaped: DeliveryRecord.columns)
                FROM deliveries
                WHERE endpoint_id = ANY(\(endpointIdsOf: projectId)) AND device_id = \(deviceId) AND id < \(last)
                  AND (\(endpoint) = '' OR endpoint_id = \(endpoint)) AND \(unescaped: condition)
                ORDER BY id DESC LIMIT \(limit + 1)
                """
        }
        if let endpointId {
            return """
                SELECT \(unescaped: DeliveryRecord.columns)
                FROM deliveries
                WHERE (endpoint_id, id) > (\(endpointId), 0) AND (endpoint_id, id) < (\(endpointId), \(last))
                  AND EXISTS (SELECT 1 FROM webhook_endpoints WHERE id = \(endpointId) AND project_id = \(projectId))
                  AND project_id = \(projectId) AND \(unescaped: condition)
                ORDER BY endpoint_id DESC, id DESC LIMIT \(limit + 1)
                """
        }
        return """
            SELECT \(unescaped: DeliveryRecord.columns)
            FROM deliveries
            WHERE (project_id, id) > (\(projectId), 0) AND (project_id, id) < (\(projectId), \(last))
              AND \(unescaped: condition)
            ORDER BY project_id DESC, id DESC LIMIT \(limit + 1)
            """
    }

    /// What a delivery in `state` waits for, and until when when that is a time: a state of
    /// `delivery_states`, read for an operator. A lapsed lease is made due by the next pass
    /// over leases (`releaseLapsedLeases`, `releaseWaitingHeads`), from when it ran out,
    /// unless another delivery of its device is ahead of it.
    static func wait(in state: DeliveryState, due: Date?, leaseEnd: Date?, behindAnother: Bool)
        -> (waitingFor: DeliveryWait?, until: Date?)
    {
        switch state {
        case .delivered, .failed, .cancelled: (nil, nil)
        case .inFlight: (.attemptInFlight, nil)
        case .parked: (.endpointEnabled, nil)
        case .queued, .retrying: (.nextAttempt, due)
        case .behind: (.earlierDelivery, nil)
        case .leaseLapsed: behindAnother ? (.earlierDelivery, nil) : (.nextAttempt, leaseEnd)
        }
    }

    /// One delivery of the project with its endpoint, payload, what it waits for, replays and
    /// attempt log; nil if the project has no such delivery.
    package func delivery(id: Int64, projectId: String) async throws -> DeliveryDetail? {
        let rows = try await database.client.query(
            """
            SELECT \(unescaped: DeliveryRecord.columns), e.url, d.erased_at IS NULL, \(unescaped: Self.payloadOf("d")),
                   s.state, NULLIF(d.next_attempt_at, 'infinity'), d.leased_until,
                   -- A lapsed lease is made due by the next pass, unless another of its device is ahead.
                   EXISTS (SELECT 1 FROM deliveries p
                            WHERE p.endpoint_id = d.endpoint_id AND p.device_id = d.device_id AND p.status = 'pending'
                              AND (COALESCE(p.sequence, 0), p.id) < (COALESCE(d.sequence, 0), d.id)),
                   d.finishing_attempt_started_at, d.finishing_attempt_latency_ms
              FROM deliveries d
              -- Only the state and the endpoint's url, so that the delivery's columns stay unambiguous.
              JOIN LATERAL (SELECT state FROM delivery_states WHERE id = d.id) s ON true
              JOIN LATERAL (SELECT url FROM webhook_endpoints WHERE id = d.endpoint_id) e ON true
             WHERE d.id = \(id) AND d.project_id = \(projectId)
            """, logger: logger)
        var found: DeliveryDetail?
        var finishing: (startedAt: Date, latency: Double)?
        for try await row in rows {
            let record = try DeliveryRecord(row: row)
            let columns = row.makeRandomAccess()
            let (url, kept, payload) = (
                try columns[12].decode(String.self), try columns[13].decode(Bool.self), try columns[14].decode(String?.self)
            )
            let stateName = try columns[15].decode(String.self)
            guard let state = DeliveryState(rawValue: stateName) else { throw DeliveryStateUnknown(name: stateName) }
            let (due, leaseEnd, behindAnother) = (
                try columns[16].decode(Date?.self), try columns[17].decode(Date?.self), try columns[18].decode(Bool.self)
            )
            if let startedAt = try columns[19].decode(Date?.self), let latency = try columns[20].decode(Double?.self) {
                finishing = (startedAt, latency)
            }
            let (waitingFor, next) = Self.wait(in: state, due: due, leaseEnd: leaseEnd, behindAnother: behindAnother)
            found = DeliveryDetail(
                delivery: record, endpointUrl: url, payload: kept ? payload : nil, waitingFor: waitingFor,
                nextAttemptAt: next, replays: [], attemptLog: [])
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
    package func replay(deliveryIds: [Int64], projectId: String) async throws -> ReplayedDeliveries {
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
    package func replayFailed(projectId: String, endpointId: String? = nil) async throws -> ReplayedDeliveries {
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
