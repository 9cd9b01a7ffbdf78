import Kafka
import Logging
import ServiceLifecycle

/// Makes a consumer's batch succeed, or sets aside exactly the records that cannot.
///
/// A batch is processed as a unit (`attempt`). When that fails:
/// - transiently (a dependency is away): the batch is retried with capped exponential
///   back-off, the component is reported unhealthy until an attempt succeeds again;
/// - because the worker lost a partition: the records of partitions it still owns
///   are processed, the others are left to their new owner;
/// - for anything else: the batch is split in halves, processed in order, until the
///   record at fault stands alone; once it has failed alone ``attemptsAloneBeforeSettingAside``
///   times in a row, it goes to the dead-letter topic and its partition moves on, while
///   every other record is processed as usual;
/// - an attempt that times out while the dependencies answer is retried, but after
///   ``timeOutsBeforeSplit`` such time-outs in a row its records are the cause (one
///   too slow to process): the batch is split as for poison, so that the slow record
///   stands alone and is set aside.
/// Splitting keeps each partition's records in order, and every part commits on its
/// own, so whatever was processed before the bad record stays processed.
package struct PoisonIsolator<Outcome: Sendable>: Sendable {
    package typealias Message = KafkaConsumerMessage

    /// Processes records atomically: all of their effects commit, or none.
    let attempt: @Sendable ([Message]) async throws -> Outcome
    /// Sends a record to the dead-letter topic with the reason, and records that its
    /// partition moved past it; retried while it fails.
    let deadLetter: @Sendable (Message, String) async throws -> Void
    /// Whether the worker still owns a record's partition (after ``FailureKind/ownershipLost``).
    let stillOwned: @Sendable (Message) -> Bool
    /// A dependency that does not answer right now, if any: asked before a record that
    /// failed for an unrecognised reason is called poison.
    let unhealthyComponent: @Sendable () async -> String?
    /// Called at every attempt and every second while one runs within its time limit:
    /// the worker is not hung, however long the batch takes.
    let signOfLife: @Sendable () -> Void
    let health: ProcessingHealth
    let backoff: Backoff
    let attemptTimeout: Duration
    /// How long an attempt in flight may go on once the process is asked to stop.
    let drainAfterShutdown: Duration
    let logger: Logger

    package init(
        attemptTimeout: Duration, drainAfterShutdown: Duration = .seconds(10), backoff: Backoff = Backoff(),
        health: ProcessingHealth, logger: Logger,
        attempt: @escaping @Sendable ([Message]) async throws -> Outcome,
        deadLetter: @escaping @Sendable (Message, String) async throws -> Void,
        stillOwned: @escaping @Sendable (Message) -> Bool = { _ in true },
        unhealthyComponent: @escaping @Sendable () async -> String? = { nil },
        signOfLife: @escaping @Sendable () -> Void = {}
    ) {
        self.signOfLife = signOfLife
        self.attempt = attempt
        self.deadLetter = deadLetter
        self.stillOwned = stillOwned
        self.unhealthyComponent = unhealthyComponent
        self.health = health
        self.backoff = backoff
        self.attemptTimeout = attemptTimeout
        self.drainAfterShutdown = drainAfterShutdown
        self.logger = logger
    }

    /// What became of a batch.
    package struct Settlement: Sendable {
        /// One outcome per part that was processed (one part unless the batch was split).
        package var outcomes: [Outcome] = []
        package var deadLettered = 0
        /// Records left to the partitions' new owners.
        package var abandoned = 0
    }

    /// Nil when the process is stopping before the batch was settled: nothing of the
    /// unsettled part was committed, so it is read again from the committed offsets.
    package func settle(_ batch: [Message]) async -> Settlement? {
        var settlement = Settlement()
        guard await settle(batch, into: &settlement) else { return nil }
        return settlement
    }

    /// Time-outs in a row, each while every dependency answered, after which an attempt's
    /// records are taken to be what makes it slow. Three: a dependency that answers the
    /// health probe but is slow for a while (a vacuum, a checkpoint) is given two more
    /// chances before records are split out; each part split off gets as many.
    package static var timeOutsBeforeSplit: Int { 3 }

    /// Attempts in a row a record must fail alone, for a reason that is not its dependencies'
    /// nor certainly its own (``FailureKind/poison(reason:certain:)``), before it is set aside. A record's
    /// own fault fails it every time; a failure of the moment that reads as the record's (a
    /// conflict with a concurrent transaction surfacing as an error no retry recognises)
    /// passes, and a good event is not set aside for it. Such a record costs its partition
    /// two more attempts and the back-off between them.
    package static var attemptsAloneBeforeSettingAside: Int { 3 }

    private func settle(_ batch: [Message], into settlement: inout Settlement) async -> Bool {
        var batch = batch
        var retries = 0
        var timeOuts = 0
        var failuresAlone = 0
        while !batch.isEmpty {
            let failure: any Error
            let records = batch
            signOfLife()
            do {
                let outcome = try await withTimeout(attemptTimeout, drainAfterShutdown: drainAfterShutdown) {
                    try await watchingDependencies { try await attempt(records) }
                }
                health.succeeded()
                settlement.outcomes.append(outcome)
                return true
            } catch is AttemptAbandoned {
                logger.info("abandoning the batch in flight to stop; it is read again from the committed offsets")
                return false
            } catch {
                failure = error
            }
            var kind = await classify(failure)
            if kind == .transient(component: AttemptTimedOut.unknownComponent) {
                timeOuts += 1
                if timeOuts >= Self.timeOutsBeforeSplit {
                    // Counted in a row already: as certain as a record's own fault.
                    kind = .poison(
                        reason: "processing did not finish within \(attemptTimeout) in \(timeOuts) attempts in a row "
                            + "while its dependencies answered", certain: true)
                }
            } else {
                timeOuts = 0
            }
            switch kind {
            case .transient(let component):
                failuresAlone = 0
                health.failedTransiently(component: component)
                logger.warning(
                    "batch failed transiently; retrying",
                    metadata: [
                        "component": "\(component)", "error": "\(String(reflecting: failure))",
                        "messages": "\(batch.count)", "retry": "\(retries + 1)",
                    ])
                guard await pause(before: retries) else { return false }
                retries += 1
                // Partitions revoked meanwhile are their new owner's to process.
                let owned = batch.filter(stillOwned)
                settlement.abandoned += batch.count - owned.count
                batch = owned
            case .ownershipLost:
                let owned = batch.filter(stillOwned)
                settlement.abandoned += batch.count - owned.count
                logger.info(
                    "partitions moved to another worker; leaving their records to it",
                    metadata: ["abandoned": "\(batch.count - owned.count)", "kept": "\(owned.count)"])
                batch = owned
            case .poison(let reason, let certain):
                guard batch.count > 1 else {
                    failuresAlone += 1
                    guard certain || failuresAlone >= Self.attemptsAloneBeforeSettingAside else {
                        logger.warning(
                            "a record failed alone; trying it again before setting it aside",
                            metadata: [
                                "topic": "\(batch[0].topic)", "partition": "\(batch[0].partition)",
                                "offset": "\(batch[0].offset)", "reason": "\(reason)", "failures": "\(failuresAlone)",
                            ])
                        guard await pause(before: failuresAlone - 1) else { return false }
                        // Its partition revoked meanwhile: the record is its new owner's to try.
                        guard stillOwned(batch[0]) else {
                            settlement.abandoned += 1
                            return true
                        }
                        continue
                    }
                    return await setAside(batch[0], reason: reason, into: &settlement)
                }
                let middle = batch.count / 2
                guard await settle(Array(batch[..<middle]), into: &settlement) else { return false }
                return await settle(Array(batch[middle...]), into: &settlement)
            }
        }
        return true
    }

    /// Runs an attempt; while it takes long, asks every few seconds whether a dependency
    /// is away, so that `/ready` says so before the attempt times out.
    private func watchingDependencies(_ body: @escaping @Sendable () async throws -> Outcome) async throws -> Outcome {
        try await withThrowingTaskGroup(of: Outcome?.self) { group in
            group.addTask { try await body() }
            group.addTask { [health, unhealthyComponent, signOfLife] in
                var seconds = 0
                while true {
                    try await Task.sleep(for: .seconds(1))
                    signOfLife()
                    seconds += 1
                    guard seconds % 5 == 0 else { continue }
                    if let component = await unhealthyComponent() { health.failedTransiently(component: component) }
                }
            }
            defer { group.cancelAll() }
            while let result = try await group.next() {
                if let outcome = result { return outcome }
            }
            throw CancellationError()
        }
    }

    /// Poison only when the dependencies answer: an unrecognised error while one of them
    /// is away is that dependency's fault, not the record's.
    private func classify(_ error: any Error) async -> FailureKind {
        let kind = FailureClassifier.classify(error)
        switch kind {
        case .poison, .transient(component: AttemptTimedOut.unknownComponent):
            // A record is poison, and a slow attempt is blamed on "processing", only while
            // the dependencies answer.
            if let component = await unhealthyComponent() { return .transient(component: component) }
            return kind
        default:
            return kind
        }
    }

    private func setAside(_ message: Message, reason: String, into settlement: inout Settlement) async -> Bool {
        logger.error(
            "dead-lettering a record that cannot be processed",
            metadata: [
                "topic": "\(message.topic)", "partition": "\(message.partition)", "offset": "\(message.offset)",
                "reason": "\(reason)",
            ])
        var retries = 0
        while true {
            do {
                try await withTimeout(attemptTimeout, drainAfterShutdown: drainAfterShutdown) {
                    try await deadLetter(message, reason)
                }
                health.deadLettered()
                settlement.deadLettered += 1
                return true
            } catch is AttemptAbandoned {
                return false
            } catch {
                let component: String
                switch FailureClassifier.classify(error) {
                case .transient(let failing): component = failing
                case .ownershipLost:
                    settlement.abandoned += 1
                    return true
                case .poison: component = "broker"
                }
                health.failedTransiently(component: component)
                logger.warning(
                    "could not dead-letter a record; retrying",
                    metadata: ["error": "\(String(reflecting: error))", "offset": "\(message.offset)"])
                guard await pause(before: retries) else { return false }
                retries += 1
            }
        }
    }

    /// Sleeps before a retry; false when the process is stopping instead.
    private func pause(before retry: Int) async -> Bool {
        if Task.isCancelled || Task.isShuttingDownGracefully { return false }
        do {
            try await cancelWhenGracefulShutdown { try await Task.sleep(for: backoff.delay(beforeRetry: retry)) }
        } catch {
            return false
        }
        return !(Task.isCancelled || Task.isShuttingDownGracefully)
    }
}

/// Capped exponential back-off with jitter, so that workers retrying after the same
/// outage do not come back in step.
package struct Backoff: Sendable {
    package var initial: Duration
    package var maximum: Duration

    package init(initial: Duration = .milliseconds(200), maximum: Duration = .seconds(5)) {
        self.initial = initial
        self.maximum = maximum
    }

    /// Between half and all of `initial * 2^retry`, never more than `maximum`.
    package func delay(beforeRetry retry: Int) -> Duration {
        let exponential = initial * (1 << min(retry, 20))
        let capped = min(exponential, maximum)
        return capped * Double.random(in: 0.5...1.0)
    }
}

/// The process is stopping and the attempt did not finish in the time it was given.
package struct AttemptAbandoned: Error, Sendable {}
