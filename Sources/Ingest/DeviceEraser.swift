import Foundation
import Kafka
import Logging
import Metrics
import Persistence
import Shared

/// Forgets a device (docs/evaluation-rules.md#device-erasure), for the management API and the CLI alike.
///
/// The erasure is requested, its marker written to the device's partition of the fixes
/// topic (behind every fix accepted before it), and carried out at the marker's position;
/// then the deliveries queued meanwhile are swept. It answers only after all of that, so
/// from its answer on nothing decided from the device's earlier fixes is sent, and the
/// fixes still on their way are dropped when the evaluator reaches them.
package struct DeviceEraser: Sendable {
    let erasures: ErasureStore
    let producer: KafkaProducer
    let fixesTopic: String
    let erased = Counter(label: "checkin_devices_erased_total")

    package init(database: Database, producer: KafkaProducer, fixesTopic: String, logger: Logger) {
        self.erasures = ErasureStore(database: database, logger: logger)
        self.producer = producer
        self.fixesTopic = fixesTopic
    }

    /// Erases the device, whether or not anything was stored about it yet; logged and
    /// counted in `checkin_devices_erased_total`.
    package func erase(projectId: String, deviceId: String, by who: String, logger: Logger) async throws -> DeviceErasure {
        let id = try await erasures.request(projectId: projectId, deviceId: deviceId)
        let marker = ErasureMarker(erasureId: id, projectId: projectId, deviceId: deviceId)
        let receipt = try await producer.send(
            KafkaRecord(
                topic: fixesTopic, key: Array(deviceId.utf8), value: try marker.value(),
                headers: [KafkaHeader(key: ErasureMarker.headerKey, value: marker.headerValue)]))
        let position = ErasurePosition(topic: receipt.topic, partition: receipt.partition, offset: receipt.offset)
        guard var erasure = try await erasures.carryOut(id: id, projectId: projectId, deviceId: deviceId, at: position) else {
            throw ErasureLost(id: id)
        }
        let swept = try await erasures.sweep(id: id, projectId: projectId, deviceId: deviceId)
        erasure.deliveriesErased += swept.erased
        erasure.deliveriesCancelled += swept.cancelled
        erased.increment()
        logger.notice(
            "device erased",
            metadata: [
                "projectId": "\(projectId)", "deviceId": "\(deviceId)", "by": "\(who)", "erasure": "\(id)",
                "position": "\(position.topic)[\(position.partition)]@\(position.offset)", "states": "\(erasure.states)",
                "decisionRecords": "\(erasure.decisionRecords)", "loggedEvents": "\(erasure.loggedEvents)",
                "unpublishedEvents": "\(erasure.unpublishedEvents)", "deliveriesErased": "\(erasure.deliveriesErased)",
                "deliveriesCancelled": "\(erasure.deliveriesCancelled)",
            ])
        return erasure
    }
}

/// An erasure request that disappeared before it was carried out (purged as abandoned).
struct ErasureLost: Error, CustomStringConvertible {
    var id: Int64
    var description: String { "erasure \(id) was no longer on record when it was to be carried out" }
}
