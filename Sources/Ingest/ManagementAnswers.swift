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
public struct APIKeyView: Codable, Sendable {
    public var record: APIKeyRecord
    public var key: String?
    /// On a rotation: the key this one replaces, and when that stops working.
    public var replacedKeyId: String?
    public var replacedKeyExpiresAt: Date?

    public init(_ record: APIKeyRecord, key: String? = nil) {
        self.record = record
        self.key = key
    }

    public subscript<Value>(dynamicMember member: KeyPath<APIKeyRecord, Value>) -> Value { record[keyPath: member] }

    private enum CodingKeys: String, CodingKey {
        case key, replacedKeyId, replacedKeyExpiresAt
    }

    public init(from decoder: any Decoder) throws {
        record = try APIKeyRecord(from: decoder)
        let container = try decoder.container(keyedBy: CodingKeys.self)
        key = try container.decodeIfPresent(String.self, forKey: .key)
        replacedKeyId = try container.decodeIfPresent(String.self, forKey: .replacedKeyId)
        replacedKeyExpiresAt = try container.decodeIfPresent(Date.self, forKey: .replacedKeyExpiresAt)
    }

    public func encode(to encoder: any Encoder) throws {
        try record.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(key, forKey: .key)
        try container.encodeIfPresent(replacedKeyId, forKey: .replacedKeyId)
        try container.encodeIfPresent(replacedKeyExpiresAt, forKey: .replacedKeyExpiresAt)
    }
}

/// `GET /v1/keys`: every key of the project, oldest first.
public struct APIKeyList: Codable, Sendable {
    public var keys: [APIKeyRecord]

    public init(keys: [APIKeyRecord]) { self.keys = keys }
}

/// A project just made, with its two keys (shown in this answer only).
public struct NewProjectAnswer: Codable, Sendable {
    public var id: String
    public var name: String
    public var createdAt: Date
    public var managementKey: APIKeyView
    public var deviceKey: APIKeyView

    public init(_ created: NewProject) {
        id = created.project.id
        name = created.project.name
        createdAt = created.project.createdAt
        managementKey = APIKeyView(created.managementKey.record, key: created.managementKey.key)
        deviceKey = APIKeyView(created.deviceKey.record, key: created.deviceKey.key)
    }
}

/// An endpoint as the API shows it; `secret` only in the answer that made it.
public struct WebhookEndpointView: Codable, Sendable {
    public var id: String
    public var url: String
    public var enabled: Bool
    public var disabledReason: String?
    public var disabledAt: Date?
    public var createdAt: Date
    public var previousSecretExpiresAt: Date?
    public var secret: String?

    public init(_ endpoint: WebhookEndpoint, secret: String? = nil) {
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
public struct WebhookEndpointList: Codable, Sendable {
    public var webhooks: [WebhookEndpointView]

    public init(webhooks: [WebhookEndpointView]) { self.webhooks = webhooks }
}

/// The answer to a replay: how many deliveries were queued again, and which of their endpoints
/// are disabled (their deliveries wait until enabled).
public struct ReplayAnswer: Codable, Sendable {
    public var replayed: Int
    public var disabledEndpoints: [String]

    public init(_ replayed: ReplayedDeliveries) {
        self.replayed = replayed.ids.count
        disabledEndpoints = replayed.disabledEndpoints
    }
}

/// The answer to a zones replacement (or a restore): how many zones, the version they now are,
/// and the fence lint's warnings (the first 100, and how many there are in all).
public struct ZonesReplaced: Codable, Sendable {
    public var zones: Int
    public var version: Int64
    public var warnings: [FenceProximity]
    public var warningCount: Int

    public init(zones: Int, version: Int64, warnings: [FenceProximity], warningCount: Int) {
        self.zones = zones
        self.version = version
        self.warnings = warnings
        self.warningCount = warningCount
    }
}

/// The answer to a dry run of a zones replacement: what it would change, zone by zone, and
/// the fence lint's warnings it would answer; nothing is applied.
public struct ZonesDryRun: Codable, Sendable {
    public var dryRun = true
    public var added: [String]
    public var removed: [String]
    public var changed: [String]
    public var unchanged: Int
    public var warnings: [FenceProximity]
    public var warningCount: Int

    public init(changes: ZonesChanges, warnings: [FenceProximity], warningCount: Int) {
        added = changes.added
        removed = changes.removed
        changed = changes.changed
        unchanged = changes.unchanged
        self.warnings = warnings
        self.warningCount = warningCount
    }
}
