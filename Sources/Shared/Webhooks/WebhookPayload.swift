import Foundation

/// The JSON body of every webhook: `{"type": "zone.checkin", "timestamp": …, "data": <event>}`.
public struct WebhookPayload: Sendable, Equatable, Codable {
    public var type: String
    public var timestamp: Date
    public var data: CheckEvent

    public init(event: CheckEvent) {
        self.type = event.type == .checkin ? "zone.checkin" : "zone.checkout"
        self.timestamp = event.type == .checkin ? event.location.timestamp : (event.checkOutTime ?? event.location.timestamp)
        self.data = event
    }
}

extension WebhookPayload {
    /// The webhook body for an event as it was received, spliced in without decoding and
    /// encoding it again: `{"type":…,"timestamp":…,"data":<event bytes>}`. The event's bytes
    /// are sent exactly as the evaluator wrote them.
    public static func body(type: EventType, timestamp: Date, event: some Collection<UInt8>) -> [UInt8] {
        let name = type == .checkin ? "zone.checkin" : "zone.checkout"
        var body: [UInt8] = []
        body.reserveCapacity(event.count + 80)
        body.append(contentsOf: #"{"type":""#.utf8)
        body.append(contentsOf: name.utf8)
        body.append(contentsOf: #"","timestamp":""#.utf8)
        body.append(contentsOf: RFC3339.format(timestamp).utf8)
        body.append(contentsOf: #"","data":"#.utf8)
        body.append(contentsOf: event)
        body.append(UInt8(ascii: "}"))
        return body
    }
}
