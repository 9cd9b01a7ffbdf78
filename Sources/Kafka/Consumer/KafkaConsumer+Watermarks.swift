import Crdkafka

extension KafkaConsumer {
    /// The partition's low and high watermarks as last reported in fetch responses: no
    /// request is made, so it may lag the broker a little; nil until a fetch reported them.
    public func cachedWatermarks(of partition: KafkaTopicPartition) -> (low: Int64, high: Int64)? {
        var low: Int64 = -1
        var high: Int64 = -1
        let client = self.client
        let error = withExtendedLifetime(client) {
            rd_kafka_get_watermark_offsets(client.handle, partition.topic, partition.partition, &low, &high)
        }
        guard error == RD_KAFKA_RESP_ERR_NO_ERROR, high >= 0 else { return nil }
        return (max(low, 0), high)
    }

    /// Each partition's high watermark, asked of its leader now. Unlike the cached one it
    /// counts every record the broker had when asked, even while fetching is paused.
    public func highWatermarks(
        of partitions: [KafkaTopicPartition], timeout: Duration = .seconds(2)
    ) async throws(KafkaError) -> [KafkaTopicPartition: Int64] {
        let client = self.client
        return try await Blocking.run { () throws(KafkaError) -> [KafkaTopicPartition: Int64] in
            var result: [KafkaTopicPartition: Int64] = [:]
            for partition in partitions {
                var low: Int64 = -1
                var high: Int64 = -1
                let error = rd_kafka_query_watermark_offsets(
                    client.handle, partition.topic, partition.partition, &low, &high, Int32(clamping: timeout.milliseconds))
                guard error == RD_KAFKA_RESP_ERR_NO_ERROR else {
                    throw KafkaError("could not read the end offset of \(partition)", code: error)
                }
                result[partition] = high
            }
            return result
        }
    }
}
