import Foundation
import Logging
import PostgresNIO
import Shared

/// Leases: a claimed delivery stays its notifier's while the attempt runs, and is freed when it stops.
extension WebhookStore {
    /// Keeps `owner`'s claims alive while their attempts run, and records that `owner`
    /// renews them (until `lease` from now), whether it holds any or not.
    ///
    /// A claimed delivery waits at 'infinity', out of the due order, for as long as it is leased,
    /// so a renewal writes the lease alone: no column of an index changes, and Postgres
    /// updates the row in its page without touching the indexes (a heap-only update), as
    /// it does when a result claims the device's next delivery (`record`). The claims of a
    /// notifier that stops renewing are made due again by `releaseLapsedLeases`.
    package func renewLeases(ids: [Int64], owner: String, lease: Duration) async throws {
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
    package func releaseLapsedLeases(lease: Duration, gapHold: Duration) async throws -> Int {
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
    package func stopRenewing(owner: String) async throws {
        try await database.client.perform("DELETE FROM notifier_leases WHERE owner = \(owner)", logger: logger)
    }

    /// Gives back claims that were never attempted (shutdown, endpoint disabled meanwhile):
    /// due again at once, without the attempt they were charged.
    package func releaseLeases(ids: [Int64], owner: String) async throws {
        guard !ids.isEmpty else { return }
        try await database.client.perform(
            """
            UPDATE deliveries SET attempts = GREATEST(attempts - 1, 0), lease_owner = NULL, leased_until = NULL,
                                  next_attempt_at = now()
             WHERE id = ANY(\(ids)::bigint[]) AND lease_owner = \(owner)
            """, logger: logger)
    }
}
