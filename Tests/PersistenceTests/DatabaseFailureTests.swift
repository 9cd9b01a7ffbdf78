import Persistence
import Testing
import _ConnectionPoolModule

/// The connection pool's errors are told by type as trouble of the database, and nothing else is.
@Suite struct DatabaseFailureTests {
    @Test(arguments: [
        ConnectionPoolError.requestCancelled, .poolShutdown, .connectionCreationCircuitBreakerTripped,
    ])
    func thePoolsErrorsAreTroubleOfTheDatabase(_ error: ConnectionPoolError) {
        #expect(DatabaseFailure.isTroubleOfTheDatabase(error))
    }

    @Test func anErrorNamedLikeThePoolIsNot() {
        struct ConnectionPoolLookalike: Error {}
        #expect(!DatabaseFailure.isTroubleOfTheDatabase(ConnectionPoolLookalike()))
    }
}
