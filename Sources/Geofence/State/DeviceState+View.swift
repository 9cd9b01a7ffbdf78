import Foundation
import Shared

extension DeviceState {
    /// The zones the state remembers anything about (presence, a check-in, an MRT).
    public var rememberedZoneIds: [String] { zones.map(\.zoneId) }

    /// The state as `GET /v1/devices/{deviceId}` shows it. `minimumRetriggerTime` gives a
    /// zone's MRT in seconds (nil: the zone is gone); `now` drops MRTs already over.
    /// Reasons for zones entered without a check-in are the caller's to add, from the
    /// decision records.
    public func view(
        projectId: String, deviceId: String, staleCheckOutAt: Date?, now: Date,
        minimumRetriggerTime: (_ zoneId: String) -> Double?
    ) -> DeviceView {
        var open: [OpenCheckInView] = []
        var inside: [InsideWithoutCheckIn] = []
        var retriggers: [RetriggerView] = []
        for memory in zones.sorted(by: { $0.zoneId < $1.zoneId }) {
            if let check = memory.open {
                open.append(
                    OpenCheckInView(
                        zoneId: memory.zoneId, fenceId: check.fenceId, beaconId: check.beaconId,
                        checkInId: check.checkInId, since: Date(timeIntervalSince1970: check.time)))
            } else if memory.isPresent {
                inside.append(InsideWithoutCheckIn(zoneId: memory.zoneId))
            }
            if let from = memory.retriggerFrom, let mrt = minimumRetriggerTime(memory.zoneId) {
                let until = Date(timeIntervalSince1970: from + mrt)
                if until > now { retriggers.append(RetriggerView(zoneId: memory.zoneId, until: until)) }
            }
        }
        return DeviceView(
            projectId: projectId, deviceId: deviceId,
            lastFix: lastFix.map {
                DecisionLocationAt(timestamp: Date(timeIntervalSince1970: $0.time), lat: $0.lat, lon: $0.lon, accuracy: $0.accuracy)
            },
            sequence: lastSequence, openCheckIns: open, insideWithoutCheckIn: inside, minimumRetriggerTimes: retriggers,
            staleCheckOutAt: open.isEmpty ? nil : staleCheckOutAt)
    }
}
