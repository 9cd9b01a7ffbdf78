import Foundation

/// Runs `body`, then `cleanUp` whether `body` returned or threw: `defer` for a clean-up that
/// must be awaited (a process or a cluster to stop), which `defer` could only block a thread of
/// the concurrency pool for.
func withCleanUp<Result>(_ cleanUp: () async -> Void, _ body: () async throws -> Result) async throws -> Result {
    let result: Result
    do {
        result = try await body()
    } catch {
        await cleanUp()
        throw error
    }
    await cleanUp()
    return result
}

/// Runs `body`, then stops `processes` (SIGTERM, then SIGKILL past `grace`) whether `body`
/// returned or threw.
func withProcessesStopped<Result>(
    _ processes: [ServiceProcess], grace: TimeInterval = 10, _ body: () async throws -> Result
) async throws -> Result {
    try await withCleanUp({ await stopProcesses(processes, grace: grace) }, body)
}

/// Stops the processes side by side, so that their graces do not add up.
func stopProcesses(_ processes: [ServiceProcess], grace: TimeInterval = 10) async {
    await withTaskGroup(of: Void.self) { group in
        for process in processes { group.addTask { await process.stop(grace: grace) } }
    }
}

/// Sleeps for `duration` without holding a thread, and without ending early in a cancelled
/// task as `Task.sleep` does: a clean-up waits out what it waits for.
func pauseEvenIfCancelled(for duration: DispatchTimeInterval) async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        DispatchQueue.global().asyncAfter(deadline: .now() + duration) { continuation.resume() }
    }
}
