import Foundation
import Shared
import Testing

/// What replacing one zones document with another changes, zone by zone: a change of any
/// member of a zone (a fence's radius as much as its name) makes it changed; its place in the
/// document does not.
@Suite struct ZonesChangesTests {
    static func zone(_ id: String, radius: Double = 50, name: String? = nil) -> ZoneDefinition {
        ZoneDefinition(
            id: id, name: name ?? id,
            fences: [FenceDefinition(id: "door", geometry: .point(Position(lon: 13.4, lat: 52.5)), radius: radius)])
    }

    @Test func zonesAreAddedRemovedChangedOrUnchangedByTheirJSON() throws {
        let current = ZonesDocument(zones: [Self.zone("a"), Self.zone("b"), Self.zone("c"), Self.zone("d")])
        let proposed = ZonesDocument(zones: [
            Self.zone("e"), Self.zone("d"), Self.zone("c", radius: 51), Self.zone("a", name: "A"), Self.zone("f"),
        ])
        #expect(
            try proposed.changes(from: current)
                == ZonesChanges(
                    added: ["e", "f"], removed: ["b"], changed: ["c", "a"], unchanged: 1,
                    changedMembers: ["c": ["fences[0].radius"], "a": ["name"]]))
        #expect(try current.changes(from: current) == ZonesChanges(unchanged: 4))
        #expect(try current.changes(from: ZonesDocument(zones: [])) == ZonesChanges(added: ["a", "b", "c", "d"]))
    }

    /// A dry run says what changed in each changed zone: values changed in place by their path,
    /// members and fences added or removed whole.
    @Test func aChangedZoneNamesTheMembersThatDiffer() throws {
        var before = Self.zone("a")
        before.customData = ["tier": "gold", "floor": "1"]
        var after = Self.zone("a", radius: 60)
        after.customData = ["tier": "silver", "floor": "1", "wing": "east"]
        after.fences.append(FenceDefinition(id: "back", geometry: .point(Position(lon: 13.41, lat: 52.5)), radius: 20))
        let changes = try ZonesDocument(zones: [after]).changes(from: ZonesDocument(zones: [before]))
        #expect(changes.changed == ["a"])
        #expect(changes.changedMembers == ["a": ["customData.tier", "customData.wing", "fences[0].radius", "fences[1]"]])
    }
}
