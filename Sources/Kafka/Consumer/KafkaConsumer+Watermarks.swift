import Crdkafka

extension KafkaConsumer {
    /// The partition's low and high watermarks as last reported in fetch responses: no
    /// request is made, so it may lag the broker a little; nil until a fetch reported them.
    public func cachedWatermarks(of partition: KafkaTopicPartition) -> (low: Int64, high: Int64)? {
        var low: Int64 = -1
        var high: Int64 = -1
        let error = rd_kafka_get_watermark_offsets(clientHandle, partition.topic, partition.partition, &low, &high)
        guard error == RD_KAFKA_RESP_ERR_NO_ERROR, high >= 0 else { return nil }
        return (max(low, 0), high)
    }
}
