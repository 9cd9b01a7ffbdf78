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

    public init(added: [String] = [], removed: [String] = [], changed: [String] = [], unchanged: Int = 0) {
        self.added = added
        self.removed = removed
        self.changed = changed
        self.unchanged = unchanged
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
            if try encoder.encode(zone) == before {
                changes.unchanged += 1
            } else {
                changes.changed.append(zone.id)
            }
        }
        let ids = Set(zones.map(\.id))
        changes.removed = current.zones.map(\.id).filter { !ids.contains($0) }
        return changes
    }
}
