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
