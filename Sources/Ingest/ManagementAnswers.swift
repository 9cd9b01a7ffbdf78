import Foundation
import Geofence
import Persistence
import Shared

/// The answers of the management API that are not a store's record as it is: what the routes
/// encode and what a client in this package (the command line, through the API) decodes, so
/// that both sides read one definition of each shape.

/// A key as the API shows it: its record, with `key` only in the answer that made it. The
/// record's members are encoded beside the others, in one object, and read through it, so a
/// member a record gains is shown without being written twice.
@dynamicMemberLookup
package struct APIKeyView: Codable, Sendable {
    package var record: APIKeyRecord
    package var key: String?
    /// On a rotation: the key this one replaces, and when that stops working.
    package var replacedKeyId: String?
    package var replacedKeyExpiresAt: Date?

    package init(_ record: APIKeyRecord, key: String? = nil) {
        self.record = record
        self.key = key
    }

    package subscript<Value>(dynamicMember member: KeyPath<APIKeyRecord, Value>) -> Value { record[keyPath: member] }

    private enum CodingKeys: String, CodingKey {
        case key, replacedKeyId, replacedKeyExpiresAt
    }

    package init(from decoder: any Decoder) throws {
        record = try APIKeyRecord(from: decoder)
        let container = try decoder.container(keyedBy: CodingKeys.self)
        key = try container.decodeIfPresent(String.self, forKey: .key)
        replacedKeyId = try container.decodeIfPresent(String.self, forKey: .replacedKeyId)
        replacedKeyExpiresAt = try container.decodeIfPresent(Date.self, forKey: .replacedKeyExpiresAt)
    }

    package func encode(to encoder: any Encoder) throws {
        try record.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(key, forKey: .key)
        try container.encodeIfPresent(replacedKeyId, forKey: .replacedKeyId)
        try container.encodeIfPresent(replacedKeyExpiresAt, forKey: .replacedKeyExpiresAt)
    }
}

/// `GET /v1/keys`: every key of the project, oldest first.
package struct APIKeyList: Codable, Sendable {
    package var keys: [APIKeyRecord]

    package init(keys: [APIKeyRecord]) { self.keys = keys }
}

/// A project just made, with its two keys (shown in this answer only).
package struct NewProjectAnswer: Codable, Sendable {
    package var id: String
    package var name: String
    package var createdAt: Date
    package var managementKey: APIKeyView
    package var deviceKey: APIKeyView

    package init(_ created: NewProject) {
        id = created.project.id
        name = created.project.name
        createdAt = created.project.createdAt
        managementKey = APIKeyView(created.managementKey.record, key: created.managementKey.key)
        deviceKey = APIKeyView(created.deviceKey.record, key: created.deviceKey.key)
    }
}

/// An endpoint as the API shows it; `secret` only in the answer that made it.
package struct WebhookEndpointView: Codable, Sendable {
    package var id: String
    package var url: String
    package var enabled: Bool
    package var disabledReason: String?
    package var disabledAt: Date?
    package var createdAt: Date
    package var previousSecretExpiresAt: Date?
    package var secret: String?

    package init(_ endpoint: WebhookEndpoint, secret: String? = nil) {
        id = endpoint.id
        url = endpoint.url
        enabled = endpoint.enabled
        disabledReason = endpoint.disabledReason
        disabledAt = endpoint.disabledAt
        createdAt = endpoint.createdAt
        previousSecretExpiresAt = endpoint.previousSecretExpiresAt
        self.secret = secret
    }
}

/// `GET /v1/webhooks`: the project's endpoints, all of them.
package struct WebhookEndpointList: Codable, Sendable {
    package var webhooks: [WebhookEndpointView]

    package init(webhooks: [WebhookEndpointView]) { self.webhooks = webhooks }
}

/// The answer to a replay: how many deliveries were queued again, and which of their endpoints
/// are disabled (their deliveries wait until enabled).
package struct ReplayAnswer: Codable, Sendable {
    package var replayed: Int
    package var disabledEndpoints: [String]

    package init(_ replayed: ReplayedDeliveries) {
        self.replayed = replayed.ids.count
        disabledEndpoints = replayed.disabledEndpoints
    }
}

/// The answer to a zones replacement (or a restore): how many zones, the version they now are,
/// and the fence lint's warnings (the first 100, and how many there are in all).
package struct ZonesReplaced: Codable, Sendable {
    package var zones: Int
    package var version: Int64
    package var warnings: [FenceProximity]
    package var warningCount: Int

    package init(zones: Int, version: Int64, warnings: [FenceProximity], warningCount: Int) {
        self.zones = zones
        self.version = version
        self.warnings = warnings
        self.warningCount = warningCount
    }
}

/// The answer to a dry run of a zones replacement: what it would change, zone by zone, and
/// the fence lint's warnings it would answer; nothing is applied.
package struct ZonesDryRun: Codable, Sendable {
    package var dryRun = true
    package var added: [String]
    package var removed: [String]
    package var changed: [String]
    package var unchanged: Int
    /// What differs in each changed zone; absent from the answers of releases before it.
    package var changedMembers: [String: [String]]?
    package var warnings: [FenceProximity]
    package var warningCount: Int

    package init(changes: ZonesChanges, warnings: [FenceProximity], warningCount: Int) {
        added = changes.added
        removed = changes.removed
        changed = changes.changed
        unchanged = changes.unchanged
        changedMembers = changes.changedMembers
        self.warnings = warnings
        self.warningCount = warningCount
    }
}
