import Persistence

/// Everything the webhook dispatcher's tasks share, and the rules that tie it together, in
/// one value held behind one lock (`WebhookDispatcher.state`).
///
/// The dispatch loop, the claimer, the attempts, the intake and the result recorder each tell
/// it what happened; it answers with what to do (send these, give those back, wake the loop
/// or the claimer), which the dispatcher does outside the lock. A call that cannot happen in
/// the current state is a bug, and traps.
///
/// Lifecycle: `initial` (before `run`: what arrives waits for the first turn) → `dispatching`
/// → `draining` (the loop stopped: attempts in flight finish, results are written) →
/// `finished`.
struct DispatcherStateMachine {
    enum Lifecycle: CustomStringConvertible {
        case initial
        case dispatching
        /// Claimed after the loop stopped (with a result, or a claim already out): given back at the end.
        case draining(givenBackAtEnd: [DeliveryAttempt])
        case finished

        var description: String {
            switch self {
            case .initial: "initial"
            case .dispatching: "dispatching"
            case .draining(let leftOver): "draining (\(leftOver.count) to give back)"
            case .finished: "finished"
            }
        }
    }

    /// What the claimer is doing.
    enum Claimer: Equatable {
        /// Claims when asked.
        case ready
        /// A claim is out, for this many and passing over these endpoints.
        case claiming(limit: Int, excluding: [String])
        /// The last claim came back short: what was due, but for the endpoints it passed over,
        /// is taken. It waits for a wake-up, or for one of those endpoints to have room again,
        /// rather than read the whole due queue to take nothing each time the loop runs low.
        case drained(passedOver: Set<String>)
        /// The dispatch loop stopped: no more claims.
        case stopped
    }

    /// How many more the dispatch loop can take, and the endpoints it holds enough of, as of
    /// its last turn: what claims (and deliveries claimed as they are queued) may add.
    struct Room: Equatable {
        var free: Int
        var saturated: [String]
    }

    /// What happened since the dispatch loop's last turn, taken whole by the next one, so
    /// that a burst of wake-ups costs one turn and one claim, not one each.
    struct Mailbox {
        /// Look for due deliveries now.
        var woken = false
        var finished: [(endpointId: String, endpointDisabled: Bool)] = []
        /// Claimed elsewhere (as they were queued, with a predecessor's result, by the claimer), to be sent.
        var claimed: [DeliveryAttempt] = []
    }

    /// What the dispatcher does after an event.
    enum EventAction {
        case none
        /// Yield to the dispatch loop: it has something to look at.
        case wakeDispatchLoop
        /// Give these back: the dispatcher has stopped and will not send them.
        case release([DeliveryAttempt])
    }

    /// What the claimer does next.
    enum ClaimAction: Equatable {
        case claim(limit: Int, perEndpoint: Int, excluding: [String])
        case wait
    }

    /// What one turn of the dispatch loop decided.
    struct Turn {
        /// Attempts to start now.
        var send: [DeliveryAttempt] = []
        /// Queued deliveries of endpoints that were disabled: given back, not attempted.
        var releaseDisabled: [DeliveryAttempt] = []
        /// Held beyond their endpoints' allowance by endpoints that started none for a second: given back.
        var releaseSurplus: [DeliveryAttempt] = []
        /// Ask the claimer for more.
        var wakeClaimer = false
    }

    /// What is left to do once the results are written.
    struct Ending {
        var release: [DeliveryAttempt]
        /// Holding nothing once those are given back, it is no notifier that stopped mid-attempt:
        /// it may say so, and the others need not look for its work.
        var stopRenewing: Bool
    }

    private(set) var lifecycle: Lifecycle = .initial
    private(set) var claimer: Claimer = .ready
    /// All of its capacity before its first turn, so that the first events' deliveries are
    /// claimed as they are queued.
    private(set) var room: Room
    /// Claimed and not yet recorded or released: the leases to renew.
    private var held: Set<Int64> = []
    private var mailbox = Mailbox()
    private var scheduler: DeliveryScheduler
    /// The loop asked for a claim after a wake-up, not only because its queue ran low: the
    /// claimer claims then even after a claim that came back short.
    private var claimRequestWoken = false

    let concurrency: Int
    let capacity: Int
    /// Most of one endpoint's deliveries one claim takes.
    let perEndpointClaim: Int
    let resultBatch: Int
    /// Each recorded result claims the device's next delivery with it, so a result alone is no
    /// reason to claim: a gap's successor is due when its hold ends, which the poll finds.
    let claimsSuccessorsWithResults: Bool
    let claimsWhenQueued: Bool

    init(configuration: NotifierConfiguration) {
        concurrency = configuration.concurrency
        capacity = WebhookDispatcher.capacity(configuration)
        perEndpointClaim = 2 * configuration.endpointConcurrency
        resultBatch = configuration.resultBatch
        claimsSuccessorsWithResults = configuration.claimsSuccessorsWithResults
        claimsWhenQueued = configuration.claimsWhenQueued
        room = Room(free: capacity, saturated: [])
        scheduler = DeliveryScheduler(
            concurrency: configuration.concurrency, endpointConcurrency: configuration.endpointConcurrency, capacity: capacity)
    }

    /// The leases to renew.
    var leasesToRenew: [Int64] { Array(held) }

    // MARK: Lifecycle

    mutating func startRunning() {
        guard case .initial = lifecycle else { preconditionFailure("the webhook dispatcher runs only once (\(lifecycle))") }
        lifecycle = .dispatching
    }

    /// The dispatch loop stopped (graceful shutdown): the claimer stops after any claim it
    /// has out, and what the loop held and had not started is given back at once.
    mutating func dispatchStopped() -> [DeliveryAttempt] {
        guard case .dispatching = lifecycle else { preconditionFailure("the dispatch loop stopped while \(lifecycle)") }
        let unsent = scheduler.removeAllQueued() + mailbox.claimed
        mailbox = Mailbox()
        held.subtract(unsent.map(\.id))
        room = Room(free: 0, saturated: [])
        lifecycle = .draining(givenBackAtEnd: [])
        switch claimer {
        case .claiming:
            break  // It comes back in `claimReturned`, which stops the claimer then.
        case .ready, .drained, .stopped:
            claimer = .stopped
        }
        return unsent
    }

    /// The attempts are done and their results written (or given up on): what was claimed
    /// since the loop stopped is given back.
    mutating func finish() -> Ending {
        guard case .draining(let leftOver) = lifecycle else { preconditionFailure("finished while \(lifecycle)") }
        if case .claiming = claimer { preconditionFailure("finished with a claim out") }
        held.subtract(leftOver.map(\.id))
        lifecycle = .finished
        claimer = .stopped
        return Ending(release: leftOver, stopRenewing: held.isEmpty)
    }

    // MARK: Events from other tasks

    /// Asks for a look at the queue now rather than at the next poll.
    mutating func wake() -> EventAction {
        switch lifecycle {
        case .initial, .dispatching:
            mailbox.woken = true
            return .wakeDispatchLoop
        case .draining, .finished:
            return .none
        }
    }

    /// Room for deliveries claimed as they are queued; nil: none (they wait for a claim).
    func roomForQueuedClaim() -> Room? {
        switch lifecycle {
        case .initial, .dispatching:
            guard claimsWhenQueued, room.free > 0 else { return nil }
            return room
        case .draining, .finished:
            return nil
        }
    }

    /// Deliveries claimed for this dispatcher elsewhere (as they were queued, or by the claimer), to send.
    mutating func adopt(_ claimed: [DeliveryAttempt]) -> EventAction {
        guard !claimed.isEmpty else { return .none }
        switch lifecycle {
        case .initial, .dispatching:
            held.formUnion(claimed.map(\.id))
            room.free -= claimed.count
            mailbox.claimed.append(contentsOf: claimed)
            return .wakeDispatchLoop
        case .draining(var leftOver):
            held.formUnion(claimed.map(\.id))
            leftOver.append(contentsOf: claimed)
            lifecycle = .draining(givenBackAtEnd: leftOver)
            return .none
        case .finished:
            return .release(claimed)
        }
    }

    /// A batch of results was written (or given up on), claiming `claimed`, the next
    /// deliveries of the devices whose results they were.
    mutating func resultsRecorded(_ recorded: [Int64], claimed: [DeliveryAttempt]) -> EventAction {
        switch lifecycle {
        case .dispatching:
            held.subtract(recorded)
            held.formUnion(claimed.map(\.id))
            // A recorded result may let the device's next delivery go: claimed with it when
            // it is the very next; otherwise (a gap) it is due when its hold ends, which the
            // poll finds: a claim after every result would mostly find nothing.
            mailbox.woken = mailbox.woken || !claimsSuccessorsWithResults
            mailbox.claimed.append(contentsOf: claimed)
            // Woken even so: fewer unwritten results may give claims room again.
            return .wakeDispatchLoop
        case .draining(var leftOver):
            held.subtract(recorded)
            held.formUnion(claimed.map(\.id))
            leftOver.append(contentsOf: claimed)
            lifecycle = .draining(givenBackAtEnd: leftOver)
            return .none
        case .initial, .finished:
            preconditionFailure("results were recorded while \(lifecycle)")
        }
    }

    /// An attempt ended; when its endpoint answered 410 Gone, the endpoint was disabled.
    mutating func attemptFinished(endpointId: String, endpointDisabled: Bool) -> EventAction {
        switch lifecycle {
        case .dispatching:
            mailbox.finished.append((endpointId, endpointDisabled))
            return .wakeDispatchLoop
        case .draining:
            // Nothing more is sent: what the scheduler counts no longer matters.
            return .none
        case .initial, .finished:
            preconditionFailure("an attempt finished while \(lifecycle)")
        }
    }

    // MARK: The dispatch loop

    /// One turn of the dispatch loop: takes in what happened since the last, starts what the
    /// free slots allow, gives back what is not to be sent, notes the room for claims and
    /// says whether to claim.
    mutating func dispatchTurn(at now: ContinuousClock.Instant) -> Turn {
        guard case .dispatching = lifecycle else { preconditionFailure("a dispatch turn while \(lifecycle)") }
        let news = mailbox
        mailbox = Mailbox()
        var turn = Turn()
        for (endpointId, endpointDisabled) in news.finished {
            scheduler.finished(endpointId: endpointId, at: now)
            if endpointDisabled { turn.releaseDisabled += scheduler.removeQueued(endpointId: endpointId) }
        }
        for delivery in news.claimed { scheduler.add(delivery, at: now) }
        while let delivery = scheduler.next(at: now) { turn.send.append(delivery) }
        turn.releaseSurplus = scheduler.takeSurplus(at: now)
        held.subtract(turn.releaseDisabled.map(\.id))
        held.subtract(turn.releaseSurplus.map(\.id))
        // Sent and not yet written, a delivery still holds its lease (it is held, and no
        // longer the scheduler's): while a whole batch of those waits for the recorder,
        // claims wait too, or the leases to renew (and the renewals that hold up the
        // recorder) would grow with every claim.
        let unwritten = held.count - scheduler.held
        room = Room(
            free: unwritten >= resultBatch ? 0 : capacity - scheduler.held, saturated: scheduler.saturatedEndpoints(at: now))
        // Claim when woken, or when fewer are queued than there are slots, so that the
        // next free slot never waits for a claim.
        if news.woken || scheduler.queued < concurrency {
            claimRequestWoken = claimRequestWoken || news.woken
            turn.wakeClaimer = true
        }
        return turn
    }

    // MARK: The claimer

    /// The claimer was asked for a claim: it claims while it has room, unless its last claim
    /// came back short and neither a wake-up nor room for an endpoint it passed over came since.
    mutating func claimRequested() -> ClaimAction {
        let woken = claimRequestWoken
        claimRequestWoken = false
        switch claimer {
        case .stopped:
            return .wait
        case .claiming:
            preconditionFailure("a claim was asked for while one is out")
        case .drained(let passedOver):
            guard woken || !passedOver.isSubset(of: room.saturated) else { return .wait }
            claimer = .ready
        case .ready:
            break
        }
        return nextClaim()
    }

    /// A claim came back: its deliveries go to the dispatch loop, and it claims again at once
    /// if it came back full.
    mutating func claimReturned(_ claimed: [DeliveryAttempt]) -> (adopted: EventAction, next: ClaimAction) {
        guard case .claiming(let limit, let excluding) = claimer else {
            preconditionFailure("a claim came back while the claimer is \(claimer)")
        }
        let adopted = adopt(claimed)
        guard case .dispatching = lifecycle else {
            claimer = .stopped
            return (adopted, .wait)
        }
        // Less than there was room for: what is due now is taken, but for the endpoints
        // passed over and those this claim took its most of.
        if claimed.count < limit {
            let filled = Dictionary(grouping: claimed, by: \.endpointId).filter { $0.value.count >= perEndpointClaim }.keys
            claimer = .drained(passedOver: Set(excluding).union(filled))
            return (adopted, .wait)
        }
        claimer = .ready
        return (adopted, nextClaim())
    }

    /// A claim failed (or was not made, cancelled): the next one waits for a wake-up.
    mutating func claimFailed() -> ClaimAction {
        guard case .claiming = claimer else { preconditionFailure("a claim failed while the claimer is \(claimer)") }
        guard case .dispatching = lifecycle else {
            claimer = .stopped
            return .wait
        }
        claimer = .drained(passedOver: [])
        return .wait
    }

    private mutating func nextClaim() -> ClaimAction {
        guard case .dispatching = lifecycle, room.free > 0 else { return .wait }
        claimer = .claiming(limit: room.free, excluding: room.saturated)
        return .claim(limit: room.free, perEndpoint: perEndpointClaim, excluding: room.saturated)
    }
}
