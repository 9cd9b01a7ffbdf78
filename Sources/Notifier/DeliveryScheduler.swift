import Persistence

/// Decides which claimed delivery is sent next, so that no endpoint can delay another.
///
/// Attempts start as soon as a slot is free (no rounds that wait for their slowest
/// member), at most `concurrency` in all and `endpointConcurrency` per endpoint, taking
/// turns between projects and, within a project, between its endpoints. A slow endpoint
/// fills its own slots and no more; the others go on at their own pace.
struct DeliveryScheduler {
    let concurrency: Int
    let endpointConcurrency: Int

    private var queues: [String: FIFO] = [:]
    private var running: [String: Int] = [:]
    /// Projects that have queued deliveries, in turn order, each with its endpoints in turn order.
    private var projectTurns: [String] = []
    private var endpointTurns: [String: [String]] = [:]
    private var projectOfEndpoint: [String: String] = [:]

    private(set) var inFlight = 0
    private(set) var queued = 0

    init(concurrency: Int, endpointConcurrency: Int) {
        self.concurrency = max(concurrency, 1)
        self.endpointConcurrency = max(1, min(endpointConcurrency, concurrency))
    }

    /// Claimed and not yet finished: queued here or in flight.
    var held: Int { inFlight + queued }

    mutating func add(_ attempt: DeliveryAttempt) {
        let endpoint = attempt.endpointId
        if queues[endpoint] == nil {
            queues[endpoint] = FIFO()
            projectOfEndpoint[endpoint] = attempt.projectId
            if endpointTurns[attempt.projectId] == nil {
                endpointTurns[attempt.projectId] = []
                projectTurns.append(attempt.projectId)
            }
            endpointTurns[attempt.projectId]!.append(endpoint)
        }
        queues[endpoint]!.push(attempt)
        queued += 1
    }

    /// The next attempt to start, if a slot is free for one; it counts as in flight until `finished`.
    mutating func next() -> DeliveryAttempt? {
        guard inFlight < concurrency, queued > 0 else { return nil }
        for projectTurn in projectTurns.indices {
            let project = projectTurns[projectTurn]
            guard let endpoints = endpointTurns[project] else { continue }
            for endpointTurn in endpoints.indices {
                let endpoint = endpoints[endpointTurn]
                guard running[endpoint, default: 0] < endpointConcurrency, let attempt = queues[endpoint]?.pop() else {
                    continue
                }
                queued -= 1
                inFlight += 1
                running[endpoint, default: 0] += 1
                // Whoever went last goes to the back of the line.
                endpointTurns[project]!.append(endpointTurns[project]!.remove(at: endpointTurn))
                projectTurns.append(projectTurns.remove(at: projectTurn))
                return attempt
            }
        }
        return nil
    }

    mutating func finished(endpointId: String) {
        inFlight -= 1
        running[endpointId, default: 1] -= 1
        forgetIfIdle(endpointId)
    }

    /// Takes back what is queued for an endpoint (it was disabled): those are not attempted.
    mutating func removeQueued(endpointId: String) -> [DeliveryAttempt] {
        var removed: [DeliveryAttempt] = []
        while let attempt = queues[endpointId]?.pop() { removed.append(attempt) }
        queued -= removed.count
        forgetIfIdle(endpointId)
        return removed
    }

    /// Takes back everything queued (shutting down).
    mutating func removeAllQueued() -> [DeliveryAttempt] {
        queues.keys.flatMap { removeQueued(endpointId: $0) }
    }

    /// Endpoints of which enough are held already: claiming more of theirs would only
    /// crowd out the others.
    var saturatedEndpoints: [String] {
        queues.compactMap { endpoint, queue in
            queue.count + running[endpoint, default: 0] >= 2 * endpointConcurrency ? endpoint : nil
        }
    }

    private mutating func forgetIfIdle(_ endpoint: String) {
        guard running[endpoint, default: 0] == 0, queues[endpoint]?.count ?? 0 == 0 else { return }
        queues[endpoint] = nil
        running[endpoint] = nil
        guard let project = projectOfEndpoint.removeValue(forKey: endpoint) else { return }
        endpointTurns[project]?.removeAll { $0 == endpoint }
        if endpointTurns[project]?.isEmpty == true {
            endpointTurns[project] = nil
            projectTurns.removeAll { $0 == project }
        }
    }
}

/// A first-in first-out queue that does not move its elements on every removal.
struct FIFO {
    private var items: [DeliveryAttempt] = []
    private var head = 0

    var count: Int { items.count - head }

    mutating func push(_ item: DeliveryAttempt) { items.append(item) }

    mutating func pop() -> DeliveryAttempt? {
        guard head < items.count else { return nil }
        let item = items[head]
        head += 1
        if head > 64 && head * 2 > items.count {
            items.removeFirst(head)
            head = 0
        }
        return item
    }
}
