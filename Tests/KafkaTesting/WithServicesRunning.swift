import ServiceLifecycle

/// Runs `services` while `body` runs, then cancels them, as a stopping service group
/// would, and waits for them to finish: for a producer or consumer a test needs only
/// for the length of its body.
package func withServicesRunning<Result: Sendable>(
    _ services: [any Service], _ body: () async throws -> Result
) async throws -> Result {
    try await withThrowingTaskGroup(of: Void.self) { group in
        for service in services { group.addTask { try await service.run() } }
        do {
            let result = try await body()
            group.cancelAll()
            try await group.waitForAll()
            return result
        } catch {
            group.cancelAll()
            try? await group.waitForAll()
            throw error
        }
    }
}
