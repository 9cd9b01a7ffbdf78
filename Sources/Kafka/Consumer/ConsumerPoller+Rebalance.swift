import Crdkafka
import Dispatch
import NIOConcurrencyHelpers

extension ConsumerPoller {
    /// The rebalance callback, for both protocols: eager (`rd_kafka_assign` of
    /// the whole new assignment) and cooperative (incremental changes only).
    func rebalance(
        handle: OpaquePointer, error: rd_kafka_resp_err_t, partitions: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>?
    ) {
        // NULL while the group is being left (a consumer stopping on a failed listener
        // gets its revocation then); the eager calls are the safe choice there.
        let cooperative = rd_kafka_rebalance_protocol(handle).map { String(cString: $0) == "COOPERATIVE" } ?? false
        let changed = TopicPartitionList.partitions(partitions)
        switch error {
        case RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS:
            assign(handle: handle, partitions: partitions, changed: changed, cooperative: cooperative)
        case RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS:
            if rd_kafka_assignment_lost(handle) != 0 {
                logger.warning("partitions lost to the group: \(changed)")
            }
            revoke(changed)
            if cooperative {
                apply(rd_kafka_incremental_unassign(handle, partitions), what: "unassign \(changed)")
            } else {
                check(rd_kafka_assign(handle, nil), what: "unassign \(changed)")
            }
        default:
            logger.error("rebalance failed: \(String(cString: rd_kafka_err2name(error)))")
            revoke(Array(localGenerations.keys))
            if cooperative {
                apply(rd_kafka_incremental_unassign(handle, partitions), what: "unassign after a failed rebalance")
            } else {
                check(rd_kafka_assign(handle, nil), what: "unassign after a failed rebalance")
            }
        }
    }

    private func assign(
        handle: OpaquePointer, partitions: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>?,
        changed: [KafkaTopicPartition], cooperative: Bool
    ) {
        if let listener, !changed.isEmpty {
            switch waitFor({ try await listener.partitionsAssigned(changed) }) {
            case .success(let offsets):
                // The assignment's offsets are where fetching starts; INVALID means the committed offset.
                if let partitions, let elements = partitions.pointee.elems {
                    for index in 0..<Int(partitions.pointee.cnt) {
                        let partition = KafkaTopicPartition(
                            topic: String(cString: elements[index].topic), partition: elements[index].partition)
                        if let offset = offsets[partition] { elements[index].offset = offset }
                    }
                }
            case .failure(let error):
                let failure =
                    error as? KafkaError
                    ?? KafkaError(message: "the rebalance listener failed for \(changed)", reason: "\(error)")
                logger.error("stopping the consumer: \(failure)")
                state.withLockedValue { $0.failed(failure) }
                gate.stop()
                if !cooperative { check(rd_kafka_assign(handle, nil), what: "unassign") }
                return
            }
        }
        if cooperative {
            apply(rd_kafka_incremental_assign(handle, partitions), what: "assign \(changed)")
        } else {
            check(rd_kafka_assign(handle, partitions), what: "assign \(changed)")
        }
        // While the application has enough batches, new partitions wait with the others.
        if fetchingPaused { pause(handle: handle) }
        let generations = state.withLockedValue { $0.assigned(changed) }
        localGenerations.merge(generations) { _, new in new }
        logger.debug("partitions assigned: \(changed)")
    }

    /// Drops what was polled but not handed out for these partitions, then
    /// lets the application finish its work on them.
    private func revoke(_ partitions: [KafkaTopicPartition]) {
        guard !partitions.isEmpty else { return }
        let revoked = Set(partitions)
        state.withLockedValue { $0.revoked(partitions) }
        for partition in partitions { localGenerations.removeValue(forKey: partition) }
        collected.removeAll { revoked.contains($0.topicPartition) }
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

    private func apply(_ error: OpaquePointer?, what: String) {
        guard let error else { return }
        logger.error("could not \(what): \(KafkaError("rebalance", consuming: error))")
    }

    private func check(_ error: rd_kafka_resp_err_t, what: String) {
        guard error != RD_KAFKA_RESP_ERR_NO_ERROR else { return }
        logger.error("could not \(what): \(String(cString: rd_kafka_err2name(error)))")
    }
}
