import Foundation
import Shared

/// A walk along a parallel through a 100 m circle: fixes 0–2 outside, 3–5 inside,
/// 6–8 well outside (beyond the exit buffer). One check-in at fix 3, one check-out at fix 6.
struct TestTrip {
    static let centre = Position(lon: 144.9631, lat: -37.8136)
    static let radius = 100.0

    let projectId: String
    let deviceId: String
    let start: Date

    init(
        projectId: String, deviceId: String = "device-" + UUID().uuidString.prefix(8).lowercased(),
        start: Date = Date().addingTimeInterval(-900)
    ) {
        self.projectId = projectId
        self.deviceId = deviceId
        self.start = start
    }

    /// Metres east of the centre for each fix.
    static let offsets: [Double] = [-400, -300, -200, -60, 0, 60, 200, 300, 400]

    static var zones: ZonesDocument {
        ZonesDocument(zones: [
            ZoneDefinition(
                id: "zone-cafe", name: "Cafe", description: "test zone", customData: ["storeId": "042", "tier": "gold"],
                minimumRetriggerTime: 3600, checkOutEnabled: true,
                fences: [FenceDefinition(id: "fence-cafe", name: "Cafe door", geometry: .point(centre), radius: radius)])
        ])
    }

    func fix(_ index: Int) -> [String: Any] {
        let metresPerDegreeLon = 111_320 * cos(Self.centre.lat * .pi / 180)
        return [
            "projectId": projectId, "deviceId": deviceId, "fixId": "\(deviceId)-\(index)",
            "timestamp": RFC3339.format(start.addingTimeInterval(Double(index) * 30)),
            "lat": Self.centre.lat, "lon": Self.centre.lon + Self.offsets[index] / metresPerDegreeLon,
            "accuracy": 5, "speed": 1.4, "bearing": 90,
        ]
    }

    func batch(_ range: Range<Int>) throws -> Data {
        try JSONSerialization.data(withJSONObject: ["fixes": range.map(fix)])
    }

    /// True when both events of the trip arrived, the check-out closing the check-in.
    func isComplete(_ payloads: [WebhookPayload]) -> Bool {
        let mine = payloads.filter { $0.data.deviceId == deviceId }
        guard let checkIn = mine.first(where: { $0.data.type == .checkin }),
            let checkOut = mine.first(where: { $0.data.type == .checkout })
        else { return false }
        return checkOut.data.checkInId == checkIn.data.checkInId
    }
}
