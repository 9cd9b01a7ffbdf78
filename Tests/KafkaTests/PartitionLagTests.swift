import Kafka
import Testing

/// Lag is what a consumer would still read: from its committed offset, or from the
/// earliest stored record when it committed nothing or its offset was deleted.
@Suite struct PartitionLagTests {
    let partition = KafkaTopicPartition(topic: "fixes", partition: 3)

    @Test func lagIsTheEndOffsetMinusTheCommittedOffset() {
        let lag = KafkaPartitionLag(partition: partition, committed: 40, watermarks: KafkaWatermarks(low: 0, high: 100))
        #expect(lag.records == 60)
        #expect(lag.firstUnprocessedOffset == 40)
    }

    @Test func nothingCommittedCountsFromTheEarliestStoredRecord() {
        let lag = KafkaPartitionLag(partition: partition, committed: nil, watermarks: KafkaWatermarks(low: 25, high: 100))
        #expect(lag.records == 75)
        #expect(lag.firstUnprocessedOffset == 25)
    }

    @Test func anOffsetBelowRetentionCountsFromTheEarliestStoredRecord() {
        let lag = KafkaPartitionLag(partition: partition, committed: 10, watermarks: KafkaWatermarks(low: 50, high: 80))
        #expect(lag.records == 30)
        #expect(lag.firstUnprocessedOffset == 50)
    }

    /// A broker whose high watermark trails the records it served must not yield negative lag.
    @Test func aWatermarkBehindTheCommittedOffsetIsNoLag() {
        let lag = KafkaPartitionLag(partition: partition, committed: 100, watermarks: KafkaWatermarks(low: 0, high: 81))
        #expect(lag.records == 0)
        #expect(lag.firstUnprocessedOffset == nil)
    }
}
