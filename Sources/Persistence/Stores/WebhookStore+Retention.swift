import Foundation
import Logging
import PostgresNIO
import Shared

extension WebhookStore {
    /// Deletes delivered deliveries (and, by cascade, their attempt log; and the bodies of
    /// events none of whose deliveries is left) delivered more than
    /// `retention` before `now` (and those an erasure cancelled that long ago), walking the
    /// table in id order `batchSize` rows per statement with `pause` between statements.
    /// Returns how many it deleted.
    ///
    /// A delivery is kept while a later one of its device may still look for it: the claim
    /// holds back a device's delivery whose predecessor (`sequence - 1`) is not queued. So
    /// one goes only once a later one of the device is delivered and its successor is not
    /// waiting, or once the device's state is gone (its next event is numbered 1 again):
    /// each device's last delivery to an endpoint stays until then. Pending and failed
    /// deliveries are never deleted.
    package func purgeDelivered(
        olderThan retention: Duration, now: Date, batchSize: Int = 1000, pause: Duration = .milliseconds(100)
    ) async throws -> Int {
        let cutoff = now.addingTimeInterval(-retention.seconds)
        var cursor: Int64 = 0
        var purged = 0
        while true {
            let after = cursor
            let (deleted, scanned, last, reachedCutoff) = try await database.withTransaction { connection in
                let rows = try await connection.query(
                    """
                    WITH scanned AS (
                        SELECT id, created_at FROM deliveries WHERE id > \(after) ORDER BY id LIMIT \(batchSize)
                    ), doomed AS (
                        SELECT d.id FROM deliveries d JOIN scanned s ON s.id = d.id
                         WHERE ((d.status = 'delivered' AND d.delivered_at < \(cutoff))
                                OR (d.status = 'cancelled' AND d.erased_at < \(cutoff)))
                           AND (d.sequence IS NULL
                                OR (EXISTS (SELECT 1 FROM deliveries n
                                             WHERE n.endpoint_id = d.endpoint_id AND n.device_id = d.device_id
                                               AND n.sequence > d.sequence AND n.status = 'delivered')
                                    AND NOT EXISTS (SELECT 1 FROM deliveries n
                                                     WHERE n.endpoint_id = d.endpoint_id AND n.device_id = d.device_id
                                                       AND n.sequence = d.sequence + 1 AND n.status <> 'delivered'))
                                OR NOT EXISTS (SELECT 1 FROM device_states st
                                                WHERE st.project_id = d.project_id AND st.device_id = d.device_id))
                           FOR UPDATE OF d SKIP LOCKED
                    ), gone AS (
                        DELETE FROM deliveries d USING doomed WHERE d.id = doomed.id RETURNING d.project_id, d.event_id
                    ), events AS (
                        SELECT count(*) AS deleted, COALESCE(array_agg(project_id), '{}') AS projects,
                               COALESCE(array_agg(event_id), '{}') AS event_ids
                          FROM gone
                    )
                    SELECT events.deleted, (SELECT count(*) FROM scanned), (SELECT max(id) FROM scanned),
                           COALESCE((SELECT max(created_at) FROM scanned) >= \(cutoff), true), events.projects, events.event_ids
                      FROM events
                    """, logger: logger)
                var result: (deleted: Int64, scanned: Int64, last: Int64?, reachedCutoff: Bool) = (0, 0, nil, true)
                var bodies: Set<EventPayload.Key> = []
                for try await (deleted, count, last, newer, projects, eventIds) in rows.decode(
                    (Int64, Int64, Int64?, Bool, [String], [String]).self)
                {
                    result = (deleted, count, last, newer)
                    for (projectId, eventId) in zip(projects, eventIds) {
                        bodies.insert(EventPayload.Key(projectId: projectId, eventId: eventId))
                    }
                }
                // Their events' bodies go with the last delivery of each.
                try await EventPayloadStore.deleteUnneeded(bodies, on: connection, logger: self.logger)
                return result
            }
            purged += Int(deleted)
            cursor = last ?? cursor
            // Ids grow with creation time, and a delivery is delivered after it is created:
            // past the first rows created after the cutoff there is nothing old enough.
            if scanned < batchSize || reachedCutoff { return purged }
            try await Task.sleep(for: pause)
        }
    }
}
