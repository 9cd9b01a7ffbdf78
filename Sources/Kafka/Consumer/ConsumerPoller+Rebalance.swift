import Dispatch
import NIOConcurrencyHelpers

extension ConsumerPoller {
    /// The rebalance callback, for both protocols: eager (assignment of the whole new
    /// assignment) and cooperative (incremental changes only).
    func rebalance(_ change: RDKafkaRebalance, client: RDKafkaClient) {
        let cooperative = client.rebalancesCooperatively
        switch change {
        case .assign(let changed):
            // The group completed a rebalance: this member has its (possibly empty) share.
            rebalanceStartedAt.withLockedValue { $0 = nil }
            assign(client: client, changed: changed, cooperative: cooperative)
        case .revoke(let changed):
            // Eager: a rebalance begins (or the member is leaving the group).
            if subscribed { rebalanceStartedAt.withLockedValue { $0 = $0 ?? .now } }
            if client.assignmentLost {
                logger.warning("partitions lost to the group: \(changed)")
            }
            // What was processed goes to the group first, if it still takes commits.
            sendDeferredCommits(client: client, immediately: true)
            revoke(changed, cooperative: cooperative)
            attempt("unassign \(changed)") { () throws(KafkaError) in
                if cooperative { try client.incrementalUnassign(changed) } else { try client.unassignAll() }
            }
        case .failed(let code, let changed):
            logger.error("rebalance failed: \(code)")
            pendingAssignments.removeAll()
            revoke(Array(localGenerations.keys), cooperative: cooperative)
            attempt("unassign after a failed rebalance") { () throws(KafkaError) in
                if cooperative { try client.incrementalUnassign(changed) } else { try client.unassignAll() }
            }
        }
    }

    /// Starts the listener on newly assigned partitions and returns at once: the listener
    /// may wait on a database for longer than the group allows a poll thread to stop, so
    /// the partitions are assigned, at the listener's offsets, by a later turn of the poll
    /// loop (`startAssigned`) once it returns. Until then they are not fetched.
    private func assign(client: RDKafkaClient, changed: [KafkaTopicPartition], cooperative: Bool) {
        guard let listener, !changed.isEmpty else {
            complete(client: client, changed: changed, offsets: [:], cooperative: cooperative)
            return
        }
        assignmentRound += 1
        let round = assignmentRound
        pendingAssignments[round] = PendingAssignment(partitions: changed, cooperative: cooperative)
        let (inbox, gate) = (listenerResults, self.gate)
        Task {
            let result: Result<[KafkaTopicPartition: Int64], any Error>
            do { result = .success(try await listener.partitionsAssigned(changed)) } catch { result = .failure(error) }
            inbox.withLockedValue { $0.append(ListenerResult(round: round, partitions: changed, offsets: result)) }
            gate.nudge()
        }
    }

    /// Assigns the partitions whose listener has returned, at the offsets it gave; on the
    /// poll thread, between polls. An assignment a revocation overtook is handed back to
    /// the listener as revoked instead. False when a listener failed: the consumer stops.
    func startAssigned(client: RDKafkaClient) -> Bool {
        let results = listenerResults.withLockedValue { results in
            defer { results.removeAll() }
            return results
        }
        for result in results {
            guard let pending = pendingAssignments.removeValue(forKey: result.round) else {
                // Overtaken: what the listener took for these partitions is let go again.
                if case .success = result.offsets, let listener {
                    let partitions = result.partitions
                    Task { await listener.partitionsRevoked(partitions) }
                }
                continue
            }
            switch result.offsets {
            case .success(let offsets):
                complete(client: client, changed: pending.partitions, offsets: offsets, cooperative: pending.cooperative)
            case .failure(let error):
                let failure =
                    error as? KafkaError
                    ?? KafkaError(message: "the rebalance listener failed for \(pending.partitions)", reason: "\(error)")
                logger.error("stopping the consumer: \(failure)")
                state.withLockedValue { $0.failed(failure) }
                gate.stop()
                return false
            }
        }
        return true
    }

    /// Assigns the partitions, each at its offset (without one: the group's committed offset).
    private func complete(
        client: RDKafkaClient, changed: [KafkaTopicPartition], offsets: [KafkaTopicPartition: Int64], cooperative: Bool
    ) {
        let starts = Dictionary(
            uniqueKeysWithValues: changed.map { ($0, offsets[$0] ?? carriedOffsets[$0] ?? RDKafkaClient.committedOffset) })
        attempt("assign \(changed)") { () throws(KafkaError) in
            if cooperative { try client.incrementalAssign(starts) } else { try client.assign(starts) }
        }
        // While the application has enough batches, new partitions wait with the others. And
        // librdkafka keeps a partition's pause across a rebalance: one paused before it was
        // revoked (the application busy, then done while nothing was assigned) would come
        // back paused and never be fetched unless resumed here.
        if fetchingPaused {
            client.pauseAssignment()
        } else {
            attempt("resume \(changed)") { () throws(KafkaError) in try client.resume(changed) }
        }
        // Carried offsets stand in for the new group's commits in its first assignment only:
        // after it, the group's own commits (the members' progress in it) are the ones to trust.
        carriedOffsets.removeAll()
        let generations = state.withLockedValue { $0.assigned(changed) }
        localGenerations.merge(generations) { _, new in new }
        assignmentsCompleted.withLockedValue { $0 += 1 }
        logger.debug("partitions assigned: \(changed)")
    }

    /// Drops what was polled but not handed out for these partitions, then
    /// lets the application finish its work on them.
    private func revoke(_ partitions: [KafkaTopicPartition], cooperative: Bool) {
        // An assignment whose listener has not returned is overtaken (see `startAssigned`):
        // every one under the eager protocol, which revokes the whole assignment; under the
        // cooperative one, those that share a revoked partition.
        let revoked = Set(partitions)
        if cooperative {
            pendingAssignments = pendingAssignments.filter { revoked.isDisjoint(with: $0.value.partitions) }
        } else {
            pendingAssignments.removeAll()
        }
        guard !partitions.isEmpty else { return }
        state.withLockedValue { $0.revoked(partitions) }
        for partition in partitions { localGenerations.removeValue(forKey: partition) }
        collected.remove(revoked)
        if let listener {
            _ = waitFor { await listener.partitionsRevoked(partitions) }
        }
        logger.debug("partitions revoked: \(partitions)")
    }

    /// Runs the listener and blocks this (dedicated) thread until it returns.
    private func waitFor<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) -> Result<T, any Error> {
        let done = DispatchSemaphore(value: 0)
        let result = NIOLockedValueBox<Result<T, any Error>?>(nil)
        Task {
            let outcome: Result<T, any Error>
            do { outcome = .success(try await body()) } catch { outcome = .failure(error) }
            result.withLockedValue { $0 = outcome }
            done.signal()
        }
        done.wait()
        return result.withLockedValue { $0! }
    }

    /// A change of assignment that can only be logged when it fails: the group goes on.
    private func attempt(_ what: String, _ change: () throws(KafkaError) -> Void) {
        do {
            try change()
        } catch {
            logger.error("could not \(what): \(error)")
        }
    }
}
