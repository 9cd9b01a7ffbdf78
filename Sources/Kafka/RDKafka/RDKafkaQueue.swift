import Crdkafka

/// A queue reference (`rd_kafka_queue_t`), released before its client is destroyed.
final class RDKafkaQueue: @unchecked Sendable {
    let queue: OpaquePointer
    /// Keeps the handle alive for as long as the queue is.
    private let client: RDKafkaClient

    init(client: RDKafkaClient, queue: OpaquePointer?) {
        self.client = client
        self.queue = queue!
    }

    deinit {
        rd_kafka_queue_destroy(queue)
    }
}
