import DequeModule

/// Records polled and not handed out yet, each partition's in offset order. A batch takes
/// the oldest across partitions by record time (then as fetched): a broker answers a fetch
/// with one partition's records after another's, as many as it has, and taken in the order
/// fetched, a partition behind another's backlog would wait for all of it. A batch costs
/// what it takes times the partitions held, whatever is kept.
struct CollectedRecords {
    private struct Entry {
        /// The order it was polled in.
        var arrival: Int
        var message: KafkaConsumerMessage
    }

    /// One queue per partition polled from, in `queues` at the partition's `slots` index.
    private var slots: [KafkaTopicPartition: Int] = [:]
    private var queues: [Deque<Entry>] = []
    private var arrivals = 0
    /// The bytes of the records held (`KafkaConsumerMessage.byteCount`).
    private(set) var bytes = 0

    var count: Int { queues.reduce(0) { $0 + $1.count } }
    var isEmpty: Bool { queues.allSatisfy(\.isEmpty) }

    mutating func append(_ message: KafkaConsumerMessage) {
        let partition = message.topicPartition
        let slot: Int
        if let known = slots[partition] {
            slot = known
        } else {
            slot = queues.count
            slots[partition] = slot
            queues.append([])
        }
        queues[slot].append(Entry(arrival: arrivals, message: message))
        arrivals += 1
        bytes += message.byteCount
    }

    /// Drops the records of `revoked` partitions (their queues stay, empty, for when they come back).
    mutating func remove(_ revoked: Set<KafkaTopicPartition>) {
        for partition in revoked {
            guard let slot = slots[partition] else { continue }
            bytes -= queues[slot].reduce(0) { $0 + $1.message.byteCount }
            queues[slot].removeAll()
        }
    }

    /// The oldest records, up to `maxCount` and `maxBytes` (at least one while any is held).
    mutating func takeBatch(maxCount: Int, maxBytes: Int) -> [KafkaConsumerMessage] {
        var batch: [KafkaConsumerMessage] = []
        var batchBytes = 0
        while batch.count < maxCount, let slot = slotWithOldestHead() {
            let size = queues[slot][queues[slot].startIndex].message.byteCount
            if !batch.isEmpty && batchBytes + size > maxBytes { break }
            batch.append(queues[slot].removeFirst().message)
            batchBytes += size
        }
        bytes -= batchBytes
        return batch
    }

    private func slotWithOldestHead() -> Int? {
        var oldest: Int?
        for slot in queues.indices where !queues[slot].isEmpty {
            if let current = oldest,
                !Self.isOlder(queues[slot][queues[slot].startIndex], than: queues[current][queues[current].startIndex])
            {
                continue
            }
            oldest = slot
        }
        return oldest
    }

    /// By record time; without one (or on a tie) the one polled first.
    private static func isOlder(_ entry: Entry, than other: Entry) -> Bool {
        switch (entry.message.timestamp, other.message.timestamp) {
        case (let time?, let otherTime?) where time != otherTime: time < otherTime
        default: entry.arrival < other.arrival
        }
    }
}
