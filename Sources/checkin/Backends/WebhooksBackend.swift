import ArgumentParser
import CommandSupport
import Foundation
import Ingest
import Persistence
import ServiceSupport
import Shared

/// What `checkin webhooks` and `checkin deliveries` ask of a project's endpoints and deliveries.
protocol WebhooksBackend: Sendable {
    /// The endpoint, with its secret (shown this once). `local`: the URL may be http or private,
    /// as `checkin dev` allows (through the API, the deployment's own policy decides).
    func add(url: String, secret: String, local: Bool) async throws -> WebhookEndpointView
    func endpoints() async throws -> [WebhookEndpointView]
    func disable(id: String, reason: String) async throws -> WebhookEndpointView
    func enable(id: String) async throws -> WebhookEndpointView
    /// The endpoint with its new secret.
    func rotateSecret(id: String, secret: String) async throws -> WebhookEndpointView
    func remove(id: String) async throws

    /// A page of deliveries, newest first; `status` one of ``DeliveryListFilter``'s names, and
    /// of one endpoint and one device when given.
    func deliveries(
        status: String?, endpointId: String?, deviceId: String?, before cursor: Int64?, limit: Int
    ) async throws -> PageAnswer<DeliveryRecord>
    func delivery(id: Int64) async throws -> DeliveryDetail
    func replay(ids: [Int64]) async throws -> ReplayAnswer
    func replayFailed() async throws -> ReplayAnswer
}

func webhooksBackend(project: String, of command: any ParsableCommand.Type) throws -> any WebhooksBackend {
    try Backend.select(
        project: project, remote: { RemoteWebhooks(api: $0) }, direct: { DirectWebhooks(project: project, command: command) })
}

struct RemoteWebhooks: WebhooksBackend {
    let api: ManagementAPI

    func add(url: String, secret: String, local: Bool) async throws -> WebhookEndpointView {
        try await api.addWebhook(url: url, secret: secret)
    }
    func endpoints() async throws -> [WebhookEndpointView] { try await api.webhooks() }
    func disable(id: String, reason: String) async throws -> WebhookEndpointView { try await api.disableWebhook(id: id, reason: reason) }
    func enable(id: String) async throws -> WebhookEndpointView { try await api.enableWebhook(id: id) }
    func rotateSecret(id: String, secret: String) async throws -> WebhookEndpointView {
        try await api.rotateWebhookSecret(id: id, secret: secret)
    }
    func remove(id: String) async throws { try await api.removeWebhook(id: id) }

    func deliveries(
        status: String?, endpointId: String?, deviceId: String?, before cursor: Int64?, limit: Int
    ) async throws -> PageAnswer<DeliveryRecord> {
        try await api.deliveries(status: status, endpointId: endpointId, deviceId: deviceId, before: cursor, limit: limit)
    }
    func delivery(id: Int64) async throws -> DeliveryDetail { try await api.delivery(id: id) }
    func replay(ids: [Int64]) async throws -> ReplayAnswer { try await api.replay(deliveryIds: ids) }
    func replayFailed() async throws -> ReplayAnswer { try await api.replayFailed() }
}

struct DirectWebhooks: WebhooksBackend {
    let project: String
    let command: any ParsableCommand.Type

    func add(url: String, secret: String, local: Bool) async throws -> WebhookEndpointView {
        let policy = local ? .local : try WebhookURLPolicy(environment: EnvironmentReader())
        do {
            _ = try policy.check(url)
        } catch {
            let hint =
                local || (policy.allowHTTP && policy.allowPrivateAddresses)
                ? "" : " (for a local set-up such as checkin dev, add --local)"
            throw CommandFailure("--url \(url) is not allowed: \(error.reason)\(hint)", helpOf: command)
        }
        let project = project
        let endpoint = try await withWebhookStore(project: project, of: command) { webhooks in
            try await webhooks.addEndpoint(projectId: project, url: url, secrets: [secret])
        }
        return WebhookEndpointView(endpoint, secret: secret)
    }

    func endpoints() async throws -> [WebhookEndpointView] {
        let project = project
        return try await withWebhookStore(project: project, of: command) { webhooks in
            try await webhooks.endpoints(projectId: project)
        }.map { WebhookEndpointView($0) }
    }

    func disable(id: String, reason: String) async throws -> WebhookEndpointView {
        let project = project
        let endpoint = try await withWebhookStore(project: project, of: command) { webhooks in
            try await webhooks.disableEndpoint(id: id, projectId: project, reason: reason)
        }
        return WebhookEndpointView(try existing(endpoint, id))
    }

    func enable(id: String) async throws -> WebhookEndpointView {
        let project = project
        let endpoint = try await withWebhookStore(project: project, of: command) { webhooks in
            try await webhooks.enableEndpoint(id: id, projectId: project)
        }
        return WebhookEndpointView(try existing(endpoint, id))
    }

    func rotateSecret(id: String, secret: String) async throws -> WebhookEndpointView {
        let window = try EnvironmentReader().secretRotationWindow()
        let project = project
        let rotation = try await withWebhookStore(project: project, of: command) { webhooks in
            try await webhooks.rotateSecret(id: id, projectId: project, newSecret: secret, window: window)
        }
        guard let rotation else { throw CommandFailure("no endpoint \(id) in project \(project)", helpOf: command) }
        return WebhookEndpointView(rotation.endpoint, secret: rotation.secret)
    }

    func remove(id: String) async throws {
        let project = project
        guard try await withWebhookStore(project: project, of: command, { try await $0.removeEndpoint(id: id, projectId: project) })
        else {
            throw CommandFailure("no endpoint \(id) in project \(project); nothing removed", helpOf: command)
        }
    }

    func existing(_ endpoint: WebhookEndpoint?, _ id: String) throws -> WebhookEndpoint {
        guard let endpoint else { throw CommandFailure("no endpoint \(id) in project \(project)", helpOf: command) }
        return endpoint
    }

    func deliveries(
        status: String?, endpointId: String?, deviceId: String?, before cursor: Int64?, limit: Int
    ) async throws -> PageAnswer<DeliveryRecord> {
        let filter = status.flatMap(DeliveryListFilter.init)
        let project = project
        return PageAnswer(
            try await withWebhookStore(project: project, of: command) { webhooks in
                try await webhooks.deliveries(
                    projectId: project, filter: filter, endpointId: endpointId, deviceId: deviceId, before: cursor, limit: limit)
            })
    }

    func delivery(id: Int64) async throws -> DeliveryDetail {
        let project = project
        let detail = try await withWebhookStore(project: project, of: command) { webhooks in
            try await webhooks.delivery(id: id, projectId: project)
        }
        guard let detail else {
            throw CommandFailure("no delivery \(DeliveryIdentifier.text(id)) in project \(project)", helpOf: command)
        }
        return detail
    }

    func replay(ids: [Int64]) async throws -> ReplayAnswer {
        let project = project
        return try answer(
            try await withWebhookStore(project: project, of: command) { webhooks in
                try await webhooks.replay(deliveryIds: ids, projectId: project)
            })
    }

    func replayFailed() async throws -> ReplayAnswer {
        let project = project
        return try answer(
            try await withWebhookStore(project: project, of: command) { webhooks in try await webhooks.replayFailed(projectId: project) })
    }

    /// The replay, or why none of it was made.
    func answer(_ replayed: ReplayedDeliveries) throws -> ReplayAnswer {
        guard replayed.missing.isEmpty else {
            let names = replayed.missing.map(DeliveryIdentifier.text).joined(separator: ", ")
            throw CommandFailure("not deliveries of project \(project): \(names); none was queued again", helpOf: command)
        }
        guard replayed.erased.isEmpty else {
            let names = replayed.erased.map(DeliveryIdentifier.text).joined(separator: ", ")
            throw CommandFailure(
                "erased with their device, so there is nothing to send again: \(names); none was queued again", helpOf: command)
        }
        // As the API answers 409 `delivery-pending`: a pending delivery goes by itself.
        guard replayed.pending.isEmpty else {
            let names = replayed.pending.map(DeliveryIdentifier.text).joined(separator: ", ")
            throw CommandFailure(
                "still pending (queued, in flight or retrying), so they go by themselves: \(names); none was queued again",
                helpOf: command)
        }
        return ReplayAnswer(replayed)
    }
}
