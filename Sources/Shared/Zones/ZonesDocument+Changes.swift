import Foundation

/// What replacing one zones document with another would change, zone by zone (by id): what a
/// dry run reports before anything is applied.
public struct ZonesChanges: Sendable, Equatable {
    /// Ids of zones only in the new document, in its order.
    public var added: [String]
    /// Ids of zones only in the current document, in its order.
    public var removed: [String]
    /// Ids of zones in both whose JSON differs, in the new document's order.
    public var changed: [String]
    /// How many zones are in both with the same JSON.
    public var unchanged: Int
    /// For each changed zone, the members that differ, as paths into its JSON in sorted order
    /// (`name`, `fences[0].radius`, `customData.tier`): a member added or removed is named
    /// whole, one changed in place down to the values that differ.
    public var changedMembers: [String: [String]]

    public init(
        added: [String] = [], removed: [String] = [], changed: [String] = [], unchanged: Int = 0,
        changedMembers: [String: [String]] = [:]
    ) {
        self.added = added
        self.removed = removed
        self.changed = changed
        self.unchanged = unchanged
        self.changedMembers = changedMembers
    }
}

extension ZonesDocument {
    /// What replacing `current` with this document changes. Zones are compared as their wire
    /// JSON (sorted keys), so a change of any member counts, and the order of zones does not
    /// (the engine's decisions do not depend on it).
    public func changes(from current: ZonesDocument) throws -> ZonesChanges {
        let encoder = WireJSON.encoder()
        var currentJSON: [String: Data] = [:]
        for zone in current.zones { currentJSON[zone.id] = try encoder.encode(zone) }
        var changes = ZonesChanges()
        for zone in zones {
            guard let before = currentJSON[zone.id] else {
                changes.added.append(zone.id)
                continue
            }
            let after = try encoder.encode(zone)
            if after == before {
                changes.unchanged += 1
            } else {
                changes.changed.append(zone.id)
                changes.changedMembers[zone.id] = Self.differingMembers(
                    try JSONSerialization.jsonObject(with: before), try JSONSerialization.jsonObject(with: after), at: "")
            }
        }
        let ids = Set(zones.map(\.id))
        changes.removed = current.zones.map(\.id).filter { !ids.contains($0) }
        return changes
    }

    /// The paths at which two JSON values differ: into objects by member, into arrays by index;
    /// a member or an element only one side has is named whole.
    static func differingMembers(_ before: Any, _ after: Any, at path: String) -> [String] {
        switch (before, after) {
        case (let before as [String: Any], let after as [String: Any]):
            return Set(before.keys).union(after.keys).sorted().flatMap { key -> [String] in
                let member = path.isEmpty ? key : "\(path).\(key)"
                guard let old = before[key], let new = after[key] else { return [member] }
                return differingMembers(old, new, at: member)
            }
        case (let before as [Any], let after as [Any]):
            return (0..<max(before.count, after.count)).flatMap { index -> [String] in
                let element = "\(path)[\(index)]"
                guard index < before.count, index < after.count else { return [element] }
                return differingMembers(before[index], after[index], at: element)
            }
        default:
            let same = (before as? NSObject).map { $0.isEqual(after) } ?? false
            return same ? [] : [path]
        }
    }
}
