import Foundation

/// The record an erasure writes to the fixes topic, keyed by the device like its fixes, so
/// that it lands in the device's partition behind every fix accepted before it: its offset
/// is where the device's old life ends and a new one begins (docs/evaluation-rules.md#device-erasure).
///
/// It is told from a fix by its header, before any decoding: a consumer that does not know
/// it would dead-letter it as an invalid fix, never evaluate it. The header carries the id
/// of the erasure request; the value names the device for the operator reading the topic.
public struct ErasureMarker: Sendable, Equatable, Codable {
    /// The header that makes a record an erasure marker; its value is the erasure id in decimal.
    public static let headerKey = "checkin-erasure"

    public var erasureId: Int64
    public var projectId: String
    public var deviceId: String

    public init(erasureId: Int64, projectId: String, deviceId: String) {
        self.erasureId = erasureId
        self.projectId = projectId
        self.deviceId = deviceId
    }

    /// The header's value.
    public var headerValue: [UInt8] { Array(String(erasureId).utf8) }

    /// The record's value.
    public func value() throws -> [UInt8] {
        Array(try JSONEncoder().encode(self))
    }

    /// The erasure id of a record with these headers, if it is a marker (a malformed id is none).
    public static func erasureId(inHeaderValue value: [UInt8]?) -> Int64? {
        guard let value, let id = Int64(String(decoding: value, as: UTF8.self)), id > 0 else { return nil }
        return id
    }
}
