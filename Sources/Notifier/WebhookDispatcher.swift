import Foundation
import Logging
import Metrics
import NIOConcurrencyHelpers
import Persistence
import ServiceLifecycle
import ServiceSupport
import Shared

/// Sends queued deliveries as signed webhooks (Standard Webhooks). A delivery is marked
/// delivered only on a 2xx answer; until then it stays queued in Postgres, so nothing is
/// lost to a crash or a partner's outage.
///
/// Dispatch is continuous: claimed deliveries are started as slots free up, each endpoint
/// limited to its own share (`DeliveryScheduler`), so a slow endpoint never holds up
/// another. Claims are short leases renewed while held; results are written in batches.
/// A device's deliveries to an endpoint go in `sequence` order: the claim query lets the
/// next one out only once the previous one is delivered or failed.
public final class WebhookDispatcher: Service, Sendable {
    /// What happened since the dispatch loop last looked. Collected under a lock and taken
    /// whole, so that a burst of wake-ups costs one claim, not one each.
    struct Mailbox {
        /// Look for due deliveries now.
        var woken = false
        var finished: [(endpointId: String, endpointDisabled: Bool)] = []
        /// Claimed with their predecessors' results, to be sent.
        var chained: [DeliveryAttempt] = []
    }

    let configuration: NotifierConfiguration
    let webhooks: WebhookStore
    let logger: Logger
    /// Names this notifier's leases, so that it only ever records or renews its own.
    let owner: String
    let policy: DeliveryPolicy
    let sender: WebhookSender
    let recorder: ResultRecorder
    /// Claimed and not yet recorded or released: the leases to renew.
    private let held: NIOLockedValueBox<Set<Int64>>
    /// How many more the dispatch loop can take, and the endpoints it holds enough of, as of
    /// its last turn: what deliveries claimed as they are queued may add. All of its capacity
    /// before its first turn, so that the first events' deliveries are claimed as they are queued.
    private let room: NIOLockedValueBox<(free: Int, saturated: [String])>
    private let mailbox: NIOLockedValueBox<Mailbox>
    private let signals: AsyncStream<Void>
    private let signal: AsyncStream<Void>.Continuation
    /// What the dispatch loop asks of the claims: `woken`, look now (something may be due);
    /// `low`, its queue runs low.
    private let claimRequests = NIOLockedValueBox<(woken: Bool, low: Bool)>((false, false))
    private let claimSignals: AsyncStream<Void>
    private let claimSignal: AsyncStream<Void>.Continuation

    let deliveredCounter = Counter(label: "checkin_notifier_deliveries_total", dimensions: [("result", "delivered")])
    let retryCounter = Counter(label: "checkin_notifier_deliveries_total", dimensions: [("result", "retry")])
    let failedCounter = Counter(label: "checkin_notifier_deliveries_total", dimensions: [("result", "failed")])
    let gapCounter = Counter(label: "checkin_notifier_order_gaps_expired_total")
    let disabledCounter = Counter(label: "checkin_notifier_endpoints_disabled_total")
    let latency = Metrics.Timer(label: "checkin_notifier_delivery_seconds")

    /// `webhookClient` connects only to addresses the URL policy allows (see `GuardedWebhookClient`).
    public init(
        configuration: NotifierConfiguration, webhooks: WebhookStore, webhookClient: GuardedWebhookClient, logger: Logger
    ) {
        self.configuration = configuration
        self.webhooks = webhooks
        self.logger = logger
        self.policy = DeliveryPolicy(configuration: configuration)
        self.room = NIOLockedValueBox((Self.capacity(configuration), []))
        self.sender = WebhookSender(configuration: configuration, client: webhookClient)
        let owner = "notifier-" + UUID().uuidString.lowercased()
        let held = NIOLockedValueBox<Set<Int64>>([])
        let mailbox = NIOLockedValueBox(Mailbox())
        let (signals, signal) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        self.owner = owner
        self.held = held
        self.mailbox = mailbox
        self.signals = signals
        self.signal = signal
        (claimSignals, claimSignal) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        self.recorder = ResultRecorder(
            webhooks: webhooks, owner: owner,
            chainLease: configuration.claimsSuccessorsWithResults ? configuration.attemptLease : nil,
            gapHold: configuration.gapHold, maximumBatch: configuration.resultBatch, logger: logger
        ) { [chainsSuccessors = configuration.claimsSuccessorsWithResults] recorded, claimed in
            held.withLockedValue {
                $0.subtract(recorded)
                $0.formUnion(claimed.map(\.id))
            }
            // A recorded result may let the device's next delivery go. Claimed with it when it is
            // the very next; otherwise (a gap) it is due when its gap hold ends, which the poll
            // finds: a claim after every result would mostly find nothing.
            mailbox.withLockedValue {
                $0.woken = $0.woken || !chainsSuccessors
                $0.chained.append(contentsOf: claimed)
            }
            signal.yield()
        }
    }

    /// How many claimed deliveries it holds at most, queued or in flight: eight times its
    /// slots. A freed slot finds the next one at hand, and the intake's batch is taken as it
    /// is queued: an event to ten endpoints is ten deliveries at once, and with twice its
    /// slots a quarter of them waited for later claims (`wait` p99 0.8 s at 1,500 a second).
    public static func capacity(_ configuration: NotifierConfiguration) -> Int { configuration.concurrency * 8 }

    /// The claim that the intake makes as it queues deliveries, or nil when the loop has no
    /// room for more (they wait for a claim then).
    func queueClaim() -> WebhookStore.QueueClaim? {
        guard configuration.claimsWhenQueued else { return nil }
        let (free, saturated) = room.withLockedValue { $0 }
        guard free > 0 else { return nil }
        return WebhookStore.QueueClaim(owner: owner, lease: configuration.attemptLease, limit: free, excluding: saturated)
    }

    /// Takes deliveries claimed for this dispatcher elsewhere (as they were queued) to send.
    func adopt(_ claimed: [DeliveryAttempt]) {
        guard !claimed.isEmpty else { return }
        held.withLockedValue { $0.formUnion(claimed.map(\.id)) }
        room.withLockedValue { $0.free -= claimed.count }
        mailbox.withLockedValue { $0.chained.append(contentsOf: claimed) }
        signal.yield()
    }

    /// Asks for a look at the queue now rather than at the next poll.
    public func wake() {
        mailbox.withLockedValue { $0.woken = true }
        signal.yield()
    }

    public func run() async throws {
        // Known to renew before its first claim, so that its claims are looked for if it stops.
        await renewLeases()
        async let recording: Void = recorder.run()
        await withTaskGroup(of: Void.self) { chores in
            chores.addTask { await self.every(self.configuration.pollInterval) { self.wake() } }
            chores.addTask { await self.every(self.configuration.attemptLease / 3) { await self.renewLeases() } }
            chores.addTask { await self.every(self.configuration.attemptLease / 3) { await self.releaseLapsedLeases() } }
            chores.addTask { await self.tendDisabledEndpoints() }
            chores.addTask { await self.sweepWaitingHeads() }
            await dispatchUntilShutdown()
            chores.cancelAll()
        }
        recorder.stopChaining()
        await recorder.flush()
        recorder.finish()
        await recording
        // Claimed with a result the loop did not take any more: given back, not left to their lease.
        await release(
            mailbox.withLockedValue { mailbox in
                defer { mailbox.chained = [] }
                return mailbox.chained
            })
        // Holding nothing, it is no notifier that stopped mid-attempt: the others need not look.
        if held.withLockedValue({ $0.isEmpty }) {
            do {
                try await webhooks.stopRenewing(owner: owner)
            } catch {
                logger.warning("could not say the notifier stopped renewing", metadata: ["error": "\(error)"])
            }
        }
        sender.client.shutdown()
    }

    /// Starts deliveries until a graceful shutdown; then gives back what it has not started
    /// and waits for the attempts in flight. Claims run beside it (`claimUntilShutdown`), so
    /// that a free slot never waits for a claim's round trip.
    private func dispatchUntilShutdown() async {
        let capacity = Self.capacity(configuration)
        var scheduler = DeliveryScheduler(
            concurrency: configuration.concurrency, endpointConcurrency: configuration.endpointConcurrency,
            capacity: capacity)
        await withDiscardingTaskGroup { senders in
            senders.addTask { await self.claimUntilShutdown() }
            for await _ in signals.cancelOnGracefulShutdown() {
                let news = mailbox.withLockedValue { mailbox in
                    defer { mailbox = Mailbox() }
                    return mailbox
                }
                let now = ContinuousClock.now
                for (endpointId, endpointDisabled) in news.finished {
                    scheduler.finished(endpointId: endpointId, at: now)
                    if endpointDisabled { await release(scheduler.removeQueued(endpointId: endpointId)) }
                }
                news.chained.forEach { scheduler.add($0, at: now) }
                while let delivery = scheduler.next(at: now) {
                    senders.addTask { await self.attempt(delivery) }
                }
                let surplus = scheduler.takeSurplus(at: now)
                if !surplus.isEmpty {
                    logger.info(
                        "gave back deliveries held for endpoints that started none for a second",
                        metadata: ["deliveries": "\(surplus.count)", "endpoints": "\(Set(surplus.map(\.endpointId)).sorted())"])
                    await release(surplus)
                }
                // Sent and not yet written, a delivery still holds its lease (it is held, and no
                // longer the scheduler's): while a whole batch of those waits for the recorder,
                // claims wait too, or the leases to renew (and the renewals that hold up the
                // recorder) would grow with every claim.
                let unwritten = held.withLockedValue { $0.count } - scheduler.held
                let free = unwritten >= configuration.resultBatch ? 0 : capacity - scheduler.held
                room.withLockedValue { $0 = (free, scheduler.saturatedEndpoints(at: now)) }
                // Claim when woken, or when fewer are queued than there are slots, so that the
                // next free slot never waits for a claim.
                if news.woken || scheduler.queued < configuration.concurrency {
                    claimRequests.withLockedValue {
                        $0.woken = $0.woken || news.woken
                        $0.low = true
                    }
                    claimSignal.yield()
                }
            }
            claimSignal.finish()
            await release(scheduler.removeAllQueued())
        }
    }

    /// Claims due deliveries for the dispatch loop while it has room: when asked, and again at
    /// once while claims come back full. After a claim that came back short (what was due,
    /// but for endpoints it held enough of, is taken) it waits for a wake-up (something was
    /// queued or recorded that no one took, or the poll interval passed) or for one of those
    /// endpoints to have room again, rather than asking each time the loop runs low: with an
    /// endpoint held full, each such claim read the whole due queue to take nothing.
    private func claimUntilShutdown() async {
        /// The endpoints passed over by the last claim that came back short; nil: not drained.
        var drainedPassingOver: Set<String>?
        for await _ in claimSignals {
            let request = claimRequests.withLockedValue { request in
                defer { request = (false, false) }
                return request
            }
            if request.woken { drainedPassingOver = nil }
            if let passedOver = drainedPassingOver {
                let stillSaturated = Set(room.withLockedValue { $0.saturated })
                guard !passedOver.isSubset(of: stillSaturated) else { continue }
                drainedPassingOver = nil
            }
            while !Task.isCancelled {
                let (free, saturated) = room.withLockedValue { $0 }
                guard free > 0 else { break }
                do {
                    let claimed = try await webhooks.claimDue(
                        limit: free, perEndpoint: 2 * configuration.endpointConcurrency, owner: owner,
                        lease: configuration.attemptLease, gapHold: configuration.gapHold, excluding: saturated)
                    adopt(claimed)
                    // Less than there was room for: what is due now is taken, but for the
                    // endpoints passed over and those this claim took its most of.
                    if claimed.count < free {
                        let perEndpoint = Dictionary(grouping: claimed, by: \.endpointId)
                        let filled = perEndpoint.filter { $0.value.count >= 2 * configuration.endpointConcurrency }.keys
                        drainedPassingOver = Set(saturated).union(filled)
                        break
                    }
                } catch {
                    drainedPassingOver = []
                    logger.error("could not claim deliveries", metadata: ["error": "\(String(reflecting: error))"])
                    break
                }
            }
        }
    }

    /// One attempt: send, decide what the answer means, hand the result to the recorder.
    func attempt(_ delivery: DeliveryAttempt) async {
        if delivery.skippedGap && delivery.attempt == 1 {
            gapCounter.increment()
            logger.warning(
                "sending without the device's previous event, which did not arrive within the gap hold",
                metadata: ["deliveryId": "\(delivery.id)", "deviceId": "\(delivery.deviceId)", "sequence": "\(delivery.sequence ?? 0)"])
        }
        let startedAt = Date()
        let started = ContinuousClock.now
        if delivery.attempt == 1 { PipelineStage.wait.record(from: delivery.queuedAt, to: startedAt) }
        let response = await sender.send(WebhookSender.request(for: delivery, now: startedAt))
        let elapsed = ContinuousClock.now - started
        let decision = policy.decide(response, attempt: delivery.attempt)
        switch decision.outcome {
        case .delivered:
            deliveredCounter.increment()
            latency.record(duration: elapsed)
            if delivery.attempt == 1 {
                PipelineStage.send.record(elapsed)
                PipelineStage.total.record(from: delivery.fixAcceptedAt)
            }
        case .retry: retryCounter.increment()
        case .failed: failedCounter.increment()
        }
        if let error = decision.error {
            logger.warning(
                "webhook delivery failed",
                metadata: [
                    "deliveryId": "\(delivery.id)", "eventId": "\(delivery.eventId)", "attempt": "\(delivery.attempt)",
                    "error": "\(error)", "willRetry": "\(decision.outcome != .failed)",
                ])
        }
        if decision.disablesEndpoint {
            do {
                _ = try await webhooks.disableEndpoint(id: delivery.endpointId, reason: "answered 410 Gone")
                disabledCounter.increment()
                logger.warning(
                    "endpoint answered 410 Gone: disabled; its deliveries wait until it is enabled again",
                    metadata: ["endpointId": "\(delivery.endpointId)"])
            } catch {
                logger.error("could not disable an endpoint", metadata: ["endpointId": "\(delivery.endpointId)", "error": "\(error)"])
            }
        }
        recorder.add(
            DeliveryResult(
                deliveryId: delivery.id, attempt: delivery.attempt, startedAt: startedAt, latency: elapsed,
                statusCode: response.statusCode, error: decision.error, outcome: decision.outcome))
        mailbox.withLockedValue { $0.finished.append((delivery.endpointId, decision.disablesEndpoint)) }
        signal.yield()
    }

    private func release(_ deliveries: [DeliveryAttempt]) async {
        guard !deliveries.isEmpty else { return }
        let ids = deliveries.map(\.id)
        do {
            try await webhooks.releaseLeases(ids: ids, owner: owner)
        } catch {
            // Not lost: the leases run out and the deliveries are claimed again.
            logger.warning("could not release deliveries", metadata: ["error": "\(error)"])
        }
        held.withLockedValue { $0.subtract(ids) }
    }

    private func renewLeases() async {
        let ids = held.withLockedValue { Array($0) }
        do {
            try await webhooks.renewLeases(ids: ids, owner: owner, lease: configuration.attemptLease)
        } catch {
            logger.error("could not renew delivery leases", metadata: ["error": "\(String(reflecting: error))"])
        }
    }

    /// The claims of a notifier that stopped renewing (killed mid-attempt) are due again
    /// within a third of a lease of running out, so that its work goes on.
    private func releaseLapsedLeases() async {
        do {
            let released = try await webhooks.releaseLapsedLeases(
                lease: configuration.attemptLease, gapHold: configuration.gapHold)
            if released > 0 { wake() }
        } catch {
            logger.error("could not release lapsed delivery leases", metadata: ["error": "\(error)"])
        }
    }

    /// Deliveries of disabled endpoints stay out of claims, and fail once their retries would
    /// have run out: every 15 seconds, their scheduled ones are parked and a step of their
    /// pending ones is looked at for expiry, from where the last step stopped.
    private func tendDisabledEndpoints() async {
        var position: WebhookStore.HeadsSweepPosition?
        while !Task.isCancelled {
            try? await Task.sleep(for: Self.disabledEndpointsInterval)
            guard !Task.isCancelled else { return }
            do {
                try await webhooks.parkDisabledDeliveries()
            } catch {
                logger.error("could not park the deliveries of disabled endpoints", metadata: ["error": "\(error)"])
            }
            do {
                let step = try await webhooks.failExpiredWhileDisabled(
                    retryWindow: configuration.retryWindow, after: position, reading: Self.headsSweepStep)
                position = step.next
                if step.failed > 0 {
                    failedCounter.increment(by: step.failed)
                    logger.warning("deliveries to disabled endpoints ran out of retries", metadata: ["failed": "\(step.failed)"])
                }
            } catch {
                position = nil
                logger.error("could not expire deliveries of disabled endpoints", metadata: ["error": "\(error)"])
            }
        }
    }

    static let disabledEndpointsInterval = Duration.seconds(15)

    /// How often the mend pass takes a step over the queue, and how many pending deliveries
    /// a step reads at most: every device's first delivery is looked at every second while
    /// fewer than this many are pending, and a backlog of any size costs each second no more
    /// than this many rows (its sweep takes longer instead).
    static let headsSweepInterval = Duration.seconds(1)
    static let headsSweepStep = 5_000

    /// Each device's first delivery of an enabled endpoint is due (see `mendWaitingHeads`):
    /// the queue swept a step at a time, from where the last step stopped.
    private func sweepWaitingHeads() async {
        var position: WebhookStore.HeadsSweepPosition?
        while !Task.isCancelled {
            try? await Task.sleep(for: Self.headsSweepInterval)
            guard !Task.isCancelled else { return }
            do {
                let step = try await webhooks.mendWaitingHeads(
                    after: position, reading: Self.headsSweepStep, gapHold: configuration.gapHold)
                position = step.next
                if step.released > 0 { wake() }
            } catch {
                logger.error("could not mend which deliveries are due", metadata: ["error": "\(error)"])
            }
        }
    }

    /// Runs `work` every `interval` until cancelled.
    private func every(_ interval: Duration, _ work: @Sendable () async -> Void) async {
        while !Task.isCancelled {
            try? await Task.sleep(for: interval)
            guard !Task.isCancelled else { return }
            await work()
        }
    }
}
