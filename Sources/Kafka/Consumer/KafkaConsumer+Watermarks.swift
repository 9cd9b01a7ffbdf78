extension KafkaConsumer {
    /// The partition's low and high watermarks as last reported in fetch responses: no
    /// request is made, so it may lag the broker a little; nil until a fetch reported them.
    package func cachedWatermarks(of partition: KafkaTopicPartition) -> (low: Int64, high: Int64)? {
        guard let marks = client.cachedWatermarks(of: partition), marks.high >= 0 else { return nil }
        return (max(marks.low, 0), marks.high)
    }

    /// Each partition's high watermark, asked of its leader now. Unlike the cached one it
    /// counts every record the broker had when asked, even while fetching is paused.
    package func highWatermarks(
        of partitions: [KafkaTopicPartition], timeout: Duration = .seconds(2)
    ) async throws(KafkaError) -> [KafkaTopicPartition: Int64] {
        let client = self.client
        return try await Blocking.run { () throws(KafkaError) -> [KafkaTopicPartition: Int64] in
            var result: [KafkaTopicPartition: Int64] = [:]
            for partition in partitions {
                result[partition] = try client.queryWatermarks(of: partition, timeout: timeout).high
            }
            return result
        }
    }
}
