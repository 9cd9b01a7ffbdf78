import Foundation
import Logging
import PostgresNIO
import Shared

extension WebhookStore {
    /// Deletes delivered deliveries (and, by cascade, their attempt log) delivered more than
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
    public func purgeDelivered(
        olderThan retention: Duration, now: Date, batchSize: Int = 1000, pause: Duration = .milliseconds(100)
    ) async throws -> Int {
        let cutoff = now.addingTimeInterval(-retention.seconds)
        var cursor: Int64 = 0
        var purged = 0
        while true {
            let rows = try await database.client.query(
                """
                WITH scanned AS (
                    SELECT id, created_at FROM deliveries WHERE id > \(cursor) ORDER BY id LIMIT \(batchSize)
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
                    DELETE FROM deliveries d USING doomed WHERE d.id = doomed.id RETURNING d.id
                )
                SELECT (SELECT count(*) FROM gone), (SELECT count(*) FROM scanned), (SELECT max(id) FROM scanned),
                       COALESCE((SELECT max(created_at) FROM scanned) >= \(cutoff), true)
                """, logger: logger)
            var scanned: Int64 = 0
            var reachedCutoff = true
            for try await (deleted, count, last, newer) in rows.decode((Int64, Int64, Int64?, Bool).self) {
                purged += Int(deleted)
                scanned = count
                cursor = last ?? cursor
                reachedCutoff = newer
            }
            // Ids grow with creation time, and a delivery is delivered after it is created:
            // past the first rows created after the cutoff there is nothing old enough.
            if scanned < batchSize || reachedCutoff { return purged }
            try await Task.sleep(for: pause)
        }
    }
}
