import Persistence

/// Decides which claimed delivery is sent next, so that no endpoint can delay another.
///
/// Attempts start as soon as a slot is free (no rounds that wait for their slowest
/// member), at most `concurrency` in all and `endpointConcurrency` per endpoint, taking
/// turns between projects and, within a project, between its endpoints. A slow endpoint
/// fills its own slots and no more; the others go on at their own pace.
///
/// How many claimed deliveries an endpoint may hold (queued here or in flight) follows how
/// fast it answers: twice its slots at least, as many as it answered in the last second up
/// to the notifier's `capacity` less that (room for another endpoint's share). So a burst
/// for an endpoint that keeps up is taken as it is queued instead of waiting for claims; an
/// endpoint whose queue has not moved for a second gives back what it holds beyond its
/// allowance (`takeSurplus`).
struct DeliveryScheduler {
    let concurrency: Int
    let endpointConcurrency: Int
    /// How many it holds at most, queued or in flight (the dispatcher claims no more).
    let capacity: Int

    private var queues: [String: FIFO] = [:]
    private var running: [String: Int] = [:]
    /// Kept while the endpoint is idle too: a fast endpoint is idle between bursts.
    private var answered: [String: AnswerCount] = [:]
    private var answeredPrunedAt: ContinuousClock.Instant?
    /// When each endpoint holding deliveries last started one (or began to hold them).
    private var lastStarted: [String: ContinuousClock.Instant] = [:]
    /// Projects that have queued deliveries, in turn order, each with its endpoints in turn order.
    private var projectTurns: [String] = []
    private var endpointTurns: [String: [String]] = [:]
    private var projectOfEndpoint: [String: String] = [:]

    private(set) var inFlight = 0
    private(set) var queued = 0

    /// `capacity` is the dispatcher's (`WebhookDispatcher.capacity`), at least `concurrency`.
    init(concurrency: Int, endpointConcurrency: Int, capacity: Int) {
        self.concurrency = max(concurrency, 1)
        self.endpointConcurrency = max(1, min(endpointConcurrency, concurrency))
        self.capacity = max(capacity, self.concurrency)
    }

    /// Claimed and not yet finished: queued here or in flight.
    var held: Int { inFlight + queued }

    mutating func add(_ attempt: DeliveryAttempt, at now: ContinuousClock.Instant = .now) {
        let endpoint = attempt.endpointId
        if queues[endpoint] == nil {
            queues[endpoint] = FIFO()
            lastStarted[endpoint] = now
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
    mutating func next(at now: ContinuousClock.Instant = .now) -> DeliveryAttempt? {
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
                lastStarted[endpoint] = now
                // Whoever went last goes to the back of the line.
                endpointTurns[project]!.append(endpointTurns[project]!.remove(at: endpointTurn))
                projectTurns.append(projectTurns.remove(at: projectTurn))
                return attempt
            }
        }
        return nil
    }

    mutating func finished(endpointId: String, at now: ContinuousClock.Instant = .now) {
        inFlight -= 1
        running[endpointId, default: 1] -= 1
        answered[endpointId, default: AnswerCount(since: now)].add(at: now)
        forgetIfIdle(endpointId)
        pruneAnswered(at: now)
    }

    /// How many claimed deliveries of `endpoint` this notifier may hold at `now`.
    func allowance(of endpoint: String, at now: ContinuousClock.Instant) -> Int {
        let floor = 2 * endpointConcurrency
        let answeredLately = answered[endpoint]?.lastSecond(at: now) ?? 0
        return max(floor, min(answeredLately, capacity - floor))
    }

    /// Takes back the queued deliveries, latest first, of endpoints that hold more than their
    /// allowance and started none for a second (they answered fast, or took a burst as it was
    /// queued, and then slowed or stopped), so that what they hold cannot keep other
    /// endpoints' deliveries out of the claims.
    mutating func takeSurplus(at now: ContinuousClock.Instant) -> [DeliveryAttempt] {
        var surplus: [DeliveryAttempt] = []
        for (endpoint, queue) in queues where now - (lastStarted[endpoint] ?? now) >= .seconds(1) {
            var excess = queue.count + running[endpoint, default: 0] - allowance(of: endpoint, at: now)
            while excess > 0, let latest = queues[endpoint]?.popLast() {
                surplus.append(latest)
                excess -= 1
            }
        }
        queued -= surplus.count
        for endpoint in Set(surplus.map(\.endpointId)) { forgetIfIdle(endpoint) }
        return surplus
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

    /// Endpoints of which enough are held already (their allowance): claiming more of theirs
    /// would only crowd out the others.
    func saturatedEndpoints(at now: ContinuousClock.Instant) -> [String] {
        queues.compactMap { endpoint, queue in
            queue.count + running[endpoint, default: 0] >= allowance(of: endpoint, at: now) ? endpoint : nil
        }
    }

    /// Forgets, about once a second, the answer counts of endpoints that answered nothing lately.
    private mutating func pruneAnswered(at now: ContinuousClock.Instant) {
        if let last = answeredPrunedAt, now - last < .seconds(1) { return }
        answeredPrunedAt = now
        answered = answered.filter { $0.value.lastSecond(at: now) > 0 }
    }

    private mutating func forgetIfIdle(_ endpoint: String) {
        guard running[endpoint, default: 0] == 0, queues[endpoint]?.count ?? 0 == 0 else { return }
        queues[endpoint] = nil
        running[endpoint] = nil
        lastStarted[endpoint] = nil
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

    /// The one added last, taken from the back.
    mutating func popLast() -> DeliveryAttempt? {
        guard head < items.count else { return nil }
        return items.removeLast()
    }

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

/// Attempts an endpoint finished, counted per second: how fast it answers lately.
struct AnswerCount {
    private var windowStart: ContinuousClock.Instant
    private var current = 0
    private var previous = 0

    init(since start: ContinuousClock.Instant) { windowStart = start }

    mutating func add(at now: ContinuousClock.Instant) {
        let elapsed = now - windowStart
        if elapsed >= .seconds(2) {
            previous = 0
            current = 0
            windowStart = now
        } else if elapsed >= .seconds(1) {
            previous = current
            current = 0
            windowStart = windowStart + .seconds(1)
        }
        current += 1
    }

    /// Answered in the last whole second counted, or in the current one if more (so that a
    /// burst counts at once); none once two seconds went by without an answer.
    func lastSecond(at now: ContinuousClock.Instant) -> Int {
        let elapsed = now - windowStart
        if elapsed < .seconds(1) { return max(previous, current) }
        if elapsed < .seconds(2) { return current }
        return 0
    }
}
