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
package final class WebhookDispatcher: Service, Sendable {
    let configuration: NotifierConfiguration
    let webhooks: WebhookStore
    let logger: Logger
    /// Names this notifier's leases, so that it only ever records or renews its own.
    let owner: String
    /// Opens what it claims with the deployment's key.
    let opener: DeliveryOpener
    let policy: DeliveryPolicy
    let sender: WebhookSender
    let recorder: ResultRecorder
    /// What its tasks share: held leases, room for claims, the loop's mailbox, the claimer.
    private let state: NIOLockedValueBox<DispatcherStateMachine>
    /// Wakes the dispatch loop; a burst of wake-ups is one turn.
    private let signals: AsyncStream<Void>
    private let signal: AsyncStream<Void>.Continuation
    /// Wakes the claimer; a burst of requests is one claim.
    private let claimSignals: AsyncStream<Void>
    private let claimSignal: AsyncStream<Void>.Continuation

    let deliveredCounter = Counter(label: "checkin_notifier_deliveries_total", dimensions: [("result", "delivered")])
    let retryCounter = Counter(label: "checkin_notifier_deliveries_total", dimensions: [("result", "retry")])
    let failedCounter = Counter(label: "checkin_notifier_deliveries_total", dimensions: [("result", "failed")])
    let gapCounter = Counter(label: "checkin_notifier_order_gaps_expired_total")
    let disabledCounter = Counter(label: "checkin_notifier_endpoints_disabled_total")
    let latency = Metrics.Timer(label: "checkin_notifier_delivery_seconds")

    /// `webhookClient` connects only to addresses the URL policy allows (see `GuardedWebhookClient`).
    package init(
        configuration: NotifierConfiguration, webhooks: WebhookStore, webhookClient: GuardedWebhookClient, logger: Logger
    ) {
        self.configuration = configuration
        self.webhooks = webhooks
        self.logger = logger
        self.policy = DeliveryPolicy(configuration: configuration)
        self.sender = WebhookSender(configuration: configuration, client: webhookClient)
        let owner = "notifier-" + UUID().uuidString.lowercased()
        let state = NIOLockedValueBox(DispatcherStateMachine(configuration: configuration))
        let (signals, signal) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        self.owner = owner
        // The key the store seals secrets with opens them here, for signing.
        let opener = DeliveryOpener(sealer: webhooks.sealer, webhooks: webhooks, owner: owner, logger: logger)
        self.opener = opener
        self.state = state
        self.signals = signals
        self.signal = signal
        (claimSignals, claimSignal) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        self.recorder = ResultRecorder(
            webhooks: webhooks, owner: owner, opener: opener,
            chainLease: configuration.claimsSuccessorsWithResults ? configuration.attemptLease : nil,
            gapHold: configuration.gapHold, maximumBatch: configuration.resultBatch, logger: logger
        ) { recorded, claimed in
            // The loop takes the successors claimed with the results at its next turn.
            if case .wakeDispatchLoop = state.withLockedValue({ $0.resultsRecorded(recorded, claimed: claimed) }) {
                signal.yield()
            }
        }
    }

    /// How many claimed deliveries it holds at most, queued or in flight: eight times its
    /// slots. A freed slot finds the next one at hand, and the intake's batch is taken as it
    /// is queued: an event to ten endpoints is ten deliveries at once, and with twice its
    /// slots a quarter of them waited for later claims (`wait` p99 0.8 s at 1,500 a second).
    package static func capacity(_ configuration: NotifierConfiguration) -> Int { configuration.concurrency * 8 }

    /// The claim that the intake makes as it queues deliveries, or nil when the loop has no
    /// room for more (they wait for a claim then).
    func queueClaim() -> WebhookStore.QueueClaim? {
        guard let room = state.withLockedValue({ $0.roomForQueuedClaim() }) else { return nil }
        return WebhookStore.QueueClaim(owner: owner, lease: configuration.attemptLease, limit: room.free, excluding: room.saturated)
    }

    /// Takes deliveries claimed for this dispatcher elsewhere (as they were queued) to send.
    func adopt(_ claimed: [DeliveryAttempt]) async {
        await perform(state.withLockedValue { $0.adopt(claimed) })
    }

    /// Asks for a look at the queue now rather than at the next poll.
    package func wake() {
        if case .wakeDispatchLoop = state.withLockedValue({ $0.wake() }) { signal.yield() }
    }

    package func run() async throws {
        state.withLockedValue { $0.startRunning() }
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
        // Claimed with a result, or by a claim already out, after the loop stopped: given back,
        // not left to their lease.
        let ending = state.withLockedValue { $0.finish() }
        await release(ending.release)
        if ending.stopRenewing {
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
        await withDiscardingTaskGroup { senders in
            senders.addTask { await self.claimUntilShutdown() }
            for await _ in signals.cancelOnGracefulShutdown() {
                let turn = state.withLockedValue { $0.dispatchTurn(at: .now) }
                for delivery in turn.send {
                    senders.addTask { await self.attempt(delivery) }
                }
                if !turn.releaseSurplus.isEmpty {
                    logger.info(
                        "gave back deliveries held for endpoints that started none for a second",
                        metadata: [
                            "deliveries": "\(turn.releaseSurplus.count)",
                            "endpoints": "\(Set(turn.releaseSurplus.map(\.endpointId)).sorted())",
                        ])
                }
                await release(turn.releaseDisabled + turn.releaseSurplus)
                if turn.wakeClaimer { claimSignal.yield() }
            }
            let unsent = state.withLockedValue { $0.dispatchStopped() }
            claimSignal.finish()
            await release(unsent)
        }
    }

    /// Claims due deliveries for the dispatch loop while it has room: when asked, and again at
    /// once while claims come back full (see `DispatcherStateMachine.claimRequested`).
    private func claimUntilShutdown() async {
        for await _ in claimSignals {
            var action = state.withLockedValue { $0.claimRequested() }
            while case .claim(let limit, let perEndpoint, let excluding) = action {
                guard !Task.isCancelled else {
                    _ = state.withLockedValue { $0.claimFailed() }
                    break
                }
                do {
                    let claimed = await opener.open(
                        try await webhooks.claimDue(
                            limit: limit, perEndpoint: perEndpoint, owner: owner, lease: configuration.attemptLease,
                            gapHold: configuration.gapHold, excluding: excluding))
                    let (adopted, next) = state.withLockedValue { $0.claimReturned(claimed) }
                    await perform(adopted)
                    action = next
                } catch {
                    logger.error("could not claim deliveries", metadata: ["error": "\(String(reflecting: error))"])
                    action = state.withLockedValue { $0.claimFailed() }
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
        await perform(
            state.withLockedValue {
                $0.attemptFinished(endpointId: delivery.endpointId, endpointDisabled: decision.disablesEndpoint)
            })
    }

    private func perform(_ action: DispatcherStateMachine.EventAction) async {
        switch action {
        case .none: break
        case .wakeDispatchLoop: signal.yield()
        case .release(let deliveries): await release(deliveries)
        }
    }

    /// Gives back leases the state machine no longer counts as held.
    private func release(_ deliveries: [DeliveryAttempt]) async {
        guard !deliveries.isEmpty else { return }
        do {
            try await webhooks.releaseLeases(ids: deliveries.map(\.id), owner: owner)
        } catch {
            // Not lost: the leases run out and the deliveries are claimed again.
            logger.warning("could not release deliveries", metadata: ["error": "\(error)"])
        }
    }

    private func renewLeases() async {
        let ids = state.withLockedValue { $0.leasesToRenew }
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
