import Foundation
import Geofence
import Ingest
import NIOHTTP1
import Persistence
import Shared

/// One call per route of the management API (openapi.yaml), answering the API's own types.
extension ManagementAPI {
    // MARK: Projects and the pipeline's status (the operator key)

    func status(limits: PipelineStatusLimits) async throws -> PipelineStatus {
        try await get(
            PipelineStatus.self, "/v1/status",
            query: [
                ("maxLag", String(limits.maximumLag)), ("maxFixAge", String(limits.maximumFixAge)),
                ("timeout", String(min(max(limits.timeout.components.seconds, 1), 30))),
            ])
    }

    func projects(after cursor: String?, limit: Int) async throws -> PageAnswer<ProjectRecord> {
        try await get(PageAnswer<ProjectRecord>.self, "/v1/projects", query: [("limit", String(limit)), ("cursor", cursor)])
    }

    func createProject(id: String, name: String?) async throws -> NewProjectAnswer {
        struct Body: Encodable {
            var id: String
            var name: String?
        }
        return try await send(NewProjectAnswer.self, .POST, "/v1/projects", json: Body(id: id, name: name))
    }

    // MARK: Keys

    func keys() async throws -> [APIKeyRecord] {
        try await get(APIKeyList.self, "/v1/keys").keys
    }

    func createKey(kind: ProjectStore.KeyKind, name: String?) async throws -> APIKeyView {
        try await send(APIKeyView.self, .POST, "/v1/keys", json: ["kind": kind.rawValue, "name": name])
    }

    func revokeKey(id: String) async throws {
        _ = try await send(.DELETE, "/v1/keys/\(Self.segment(id))")
    }

    func rotateKey(id: String, overlapSeconds: Int) async throws -> APIKeyView {
        try await send(APIKeyView.self, .POST, "/v1/keys/\(Self.segment(id))/rotate", json: ["overlapSeconds": overlapSeconds])
    }

    // MARK: Zones

    func zones() async throws -> ZonesDocument {
        try await get(ZonesDocument.self, "/v1/zones")
    }

    /// `PUT /v1/zones` with a document as the file holds it: the API validates it, and its
    /// answer names every problem.
    func replaceZones(_ document: Data, expectedVersion: Int64?, message: String?) async throws -> ZonesReplaced {
        try await send(.PUT, "/v1/zones", query: [("message", message)], body: document, headers: Self.ifMatch(expectedVersion))
            .decode(ZonesReplaced.self, from: baseURL + "/v1/zones")
    }

    /// What `replaceZones` would change, and the version it is compared with (the `ETag`).
    func previewZones(_ document: Data, expectedVersion: Int64?) async throws -> (changes: ZonesDryRun, version: Int64) {
        let answer = try await send(
            .PUT, "/v1/zones", query: [("dryRun", "true")], body: document, headers: Self.ifMatch(expectedVersion))
        let version = answer.headers.first(name: "ETag").flatMap { Int64($0.trimmingCharacters(in: CharacterSet(charactersIn: "\""))) }
        return (try answer.decode(ZonesDryRun.self, from: baseURL + "/v1/zones"), version ?? 0)
    }

    func zoneVersions(before cursor: Int64?, limit: Int) async throws -> PageAnswer<ZonesVersionSummary> {
        try await get(
            PageAnswer<ZonesVersionSummary>.self, "/v1/zones/versions",
            query: [("limit", String(limit)), ("cursor", cursor.map(String.init))])
    }

    func zones(version: Int64) async throws -> ZonesDocument {
        try await get(ZonesDocument.self, "/v1/zones/versions/\(version)")
    }

    func restoreZones(version: Int64, expectedVersion: Int64?) async throws -> ZonesReplaced {
        let path = "/v1/zones/versions/\(version)/restore"
        return try await send(.POST, path, headers: Self.ifMatch(expectedVersion)).decode(ZonesReplaced.self, from: baseURL + path)
    }

    static func ifMatch(_ version: Int64?) -> [(String, String)] {
        version.map { [("If-Match", "\"\($0)\"")] } ?? []
    }

    // MARK: Webhook endpoints

    func webhooks() async throws -> [WebhookEndpointView] {
        try await get(WebhookEndpointList.self, "/v1/webhooks").webhooks
    }

    func addWebhook(url: String, secret: String) async throws -> WebhookEndpointView {
        try await send(WebhookEndpointView.self, .POST, "/v1/webhooks", json: ["url": url, "secret": secret])
    }

    func disableWebhook(id: String, reason: String) async throws -> WebhookEndpointView {
        try await send(WebhookEndpointView.self, .POST, "/v1/webhooks/\(Self.segment(id))/disable", json: ["reason": reason])
    }

    func enableWebhook(id: String) async throws -> WebhookEndpointView {
        let path = "/v1/webhooks/\(Self.segment(id))/enable"
        return try await send(.POST, path).decode(WebhookEndpointView.self, from: baseURL + path)
    }

    func rotateWebhookSecret(id: String, secret: String) async throws -> WebhookEndpointView {
        try await send(WebhookEndpointView.self, .POST, "/v1/webhooks/\(Self.segment(id))/rotate-secret", json: ["secret": secret])
    }

    func removeWebhook(id: String) async throws {
        _ = try await send(.DELETE, "/v1/webhooks/\(Self.segment(id))")
    }

    // MARK: Deliveries

    func deliveries(
        status: String?, endpointId: String?, deviceId: String?, before cursor: Int64?, limit: Int
    ) async throws -> PageAnswer<DeliveryRecord> {
        try await get(
            PageAnswer<DeliveryRecord>.self, "/v1/deliveries",
            query: [
                ("status", status), ("endpointId", endpointId), ("deviceId", deviceId), ("limit", String(limit)),
                ("cursor", cursor.map(String.init)),
            ])
    }

    func delivery(id: Int64) async throws -> DeliveryDetail {
        try await get(DeliveryDetail.self, "/v1/deliveries/\(DeliveryIdentifier.text(id))")
    }

    func replay(deliveryIds: [Int64]) async throws -> ReplayAnswer {
        try await send(ReplayAnswer.self, .POST, "/v1/deliveries/replay", json: ["ids": deliveryIds.map(DeliveryIdentifier.text)])
    }

    func replayFailed() async throws -> ReplayAnswer {
        try await send(ReplayAnswer.self, .POST, "/v1/deliveries/replay", json: ["status": "failed"])
    }

    // MARK: Devices and events

    func device(_ deviceId: String) async throws -> DeviceView {
        try await get(DeviceView.self, "/v1/devices/\(Self.segment(deviceId))")
    }

    func decisions(of deviceId: String, cursor: Int64?, limit: Int) async throws -> PageAnswer<DecisionRecord> {
        try await get(
            PageAnswer<DecisionRecord>.self, "/v1/devices/\(Self.segment(deviceId))/decisions",
            query: [("limit", String(limit)), ("cursor", cursor.map(String.init))])
    }

    func eraseDevice(_ deviceId: String) async throws -> DeviceErasure {
        let path = "/v1/devices/\(Self.segment(deviceId))"
        return try await send(.DELETE, path).decode(DeviceErasure.self, from: baseURL + path)
    }

    func events(_ filter: EventFilter, cursor: Int64?, limit: Int) async throws -> PageAnswer<LoggedEvent> {
        try await get(
            PageAnswer<LoggedEvent>.self, "/v1/events",
            query: [
                ("deviceId", filter.deviceId), ("zoneId", filter.zoneId), ("type", filter.type?.rawValue),
                ("from", filter.from.map(RFC3339.format)), ("until", filter.until.map(RFC3339.format)), ("limit", String(limit)),
                ("cursor", cursor.map(String.init)),
            ])
    }
}
