import Foundation
import Shared

extension GeofenceEngine {
    /// A check-in, fully described: zone, trigger, location; its id is also the check-in id.
    func checkInEvent(zone: CompiledZone, trigger: Trigger, context: FixContext) -> CheckEvent {
        var fence: FenceSummary? = nil
        var beacon: BeaconSummary? = nil
        var crossing: GeolineCrossing? = nil
        var isGeoline = false
        let triggerId: String
        switch trigger {
        case .fence(let f):
            fence = tables.fenceSummary(f)
            triggerId = "fence:" + (fence?.id ?? "")
        case .beacon(let b):
            beacon = tables.beacons[Int(b)].summary
            triggerId = "beacon:" + (beacon?.id ?? "")
        case .geoline(let found):
            fence = tables.fenceSummary(found.fence)
            crossing = found.crossing
            isGeoline = true
            triggerId = "geoline:" + (fence?.id ?? "")
        }
        var identity = EventIdentity()
        identity.add(context.fix.projectId)
        identity.add(context.fix.deviceId)
        identity.add(zone.summary.id)
        identity.add("checkin")
        identity.add(time: context.time)
        identity.add(context.fix.fixId ?? "")
        identity.add(triggerId)
        let id = identity.uuid
        return CheckEvent(
            eventId: id, type: .checkin, projectId: context.fix.projectId, deviceId: context.fix.deviceId,
            checkInId: id, zone: zone.summary, fence: fence, beacon: beacon, location: EventLocation(context.fix),
            willCheckOut: zone.checkOutEnabled && !isGeoline, mode: context.fix.mode, crossing: crossing)
    }

    /// The check-out closing `open`, with the check-in's fence or beacon and the dwell time.
    func checkOutEvent(
        zone: CompiledZone, open: OpenCheckIn, projectId: String, deviceId: String, time: Double,
        location: EventLocation, mode: FixMode, fixId: String?, reason: CheckOutReason
    ) -> CheckEvent {
        var identity = EventIdentity()
        identity.add(projectId)
        identity.add(deviceId)
        identity.add(zone.summary.id)
        identity.add("checkout")
        identity.add(time: time)
        identity.add(fixId ?? "")
        identity.add(open.checkInId)
        let id = identity.uuid
        var fence: FenceSummary? = nil
        if let fenceId = open.fenceId {
            if let f = zone.fences.first(where: { tables.fenceInfos[Int($0)].id == fenceId }) {
                fence = tables.fenceSummary(f)
            }
        }
        var beacon: BeaconSummary? = nil
        if let beaconId = open.beaconId {
            beacon = zone.beacons.lazy.map { self.tables.beacons[Int($0)].summary }.first { $0.id == beaconId }
        }
        return CheckEvent(
            eventId: id, type: .checkout, projectId: projectId, deviceId: deviceId, checkInId: open.checkInId,
            zone: zone.summary, fence: fence, beacon: beacon, location: location, willCheckOut: true, mode: mode,
            checkInTime: Date(timeIntervalSince1970: open.time), checkOutTime: Date(timeIntervalSince1970: time),
            dwellSeconds: time - open.time, reason: reason)
    }
}
