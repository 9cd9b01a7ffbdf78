import Persistence

extension Database {
    /// Whether the database answers a trivial query within `limit`: tells a failing
    /// dependency from a failing record. Bounded like an attempt (``withTimeout(_:component:drainAfterShutdown:_:)``):
    /// it answers at its limit even when the query does not heed cancellation, as a query
    /// sent to a server that stopped answering does not.
    package func isReachable(within limit: Duration) async -> Bool {
        do {
            try await withTimeout(limit, component: "database") {
                try await self.client.perform("SELECT 1", logger: self.logger)
            }
            return true
        } catch {
            return false
        }
    }
}
