import Logging
import PostgresNIO

/// Where a delivery is, as the database names it (the view `delivery_states`, migration 39):
/// the one definition of what its columns mean together. A pending delivery waits at
/// `next_attempt_at = 'infinity'` for several reasons, which only this tells apart.
///
/// | state | columns | moved there by |
/// | --- | --- | --- |
/// | `queued` | pending, due at a time, no attempt yet | queueing (`enqueue`), a replay (`replay`), a claim given back unsent (`releaseLeases`) |
/// | `in-flight` | pending, lease live (`leased_until > now()`) | a claim (`claimDue`), queueing that takes it (`enqueue` with a claim), recording the one before it (`record` with `chainLease`) |
/// | `retrying` | pending, due at a time, attempted | recording a failed attempt (`record`), a pass over lapsed leases (`releaseLapsedLeases`, `mendWaitingHeads`, `releaseWaitingHeads`) |
/// | `behind` | pending, at 'infinity', no lease | queueing behind an earlier one of its device, recording a retry of an earlier one (`record`), a replay behind another |
/// | `lease-lapsed` | pending, at 'infinity', lease run out | its notifier stopped (or stalled) before recording; the mend and lease passes make it due |
/// | `parked` | pending, endpoint disabled | disabling the endpoint (`disableEndpoint`, then `parkDisabledDeliveries` keeps them out of the claims); `enableEndpoint` and `releaseWaitingHeads` let the first of each device go |
/// | `delivered` | status delivered | recording a 2xx (`record`) |
/// | `failed` | status failed | recording the last failed attempt (`record`), retries running out while parked (`failExpiredWhileDisabled`); a replay (`replay`) makes it `queued` or `behind` |
/// | `cancelled` | status cancelled | erasing the device (`ErasureStore`) |
///
/// The database refuses a lease that is half there (an owner without an end, or the other way
/// round) and a lease on a delivery that is no longer pending (`deliveries_lease_whole`,
/// `deliveries_lease_pending`).
package enum DeliveryState: String, Sendable, Codable, CaseIterable {
    case queued
    case inFlight = "in-flight"
    case retrying
    case behind
    case leaseLapsed = "lease-lapsed"
    case parked
    case delivered, failed, cancelled
}

extension WebhookStore {
    /// The state of each of these deliveries that exists, as `delivery_states` names it.
    package func states(of ids: [Int64]) async throws -> [Int64: DeliveryState] {
        guard !ids.isEmpty else { return [:] }
        let rows = try await database.client.query(
            "SELECT id, state FROM delivery_states WHERE id = ANY(\(ids)::bigint[])", logger: logger)
        var states: [Int64: DeliveryState] = [:]
        for try await (id, name) in rows.decode((Int64, String).self) {
            guard let state = DeliveryState(rawValue: name) else {
                throw DeliveryStateUnknown(name: name)
            }
            states[id] = state
        }
        return states
    }
}

/// The database named a state this build does not know: a newer release's view.
package struct DeliveryStateUnknown: Error, CustomStringConvertible {
    package var name: String
    package var description: String { "the database names a delivery state this release does not know: \(name)" }
}
