import Foundation
import Logging
import Persistence
import Shared

/// A claimed delivery opened for sending: its endpoint's secrets unsealed and its body at hand.
public struct DeliveryAttempt: Sendable {
    public var id: Int64
    public var endpointId: String
    public var projectId: String
    public var url: String
    public var secrets: [String]
    public var eventId: String
    public var deviceId: String
    public var sequence: Int?
    public var payload: String
    /// Attempts so far, including this one.
    public var attempt: Int
    /// Claimed although the device's previous event never reached this endpoint's queue
    /// within the gap hold.
    public var skippedGap: Bool
    /// When it was queued, and when the fix that decided its event was accepted: the
    /// pipeline's stages are timed from them.
    public var queuedAt: Date?
    public var fixAcceptedAt: Date?

    public init(
        id: Int64, endpointId: String, projectId: String, url: String, secrets: [String], eventId: String,
        deviceId: String, sequence: Int?, payload: String, attempt: Int, skippedGap: Bool = false, queuedAt: Date? = nil,
        fixAcceptedAt: Date? = nil
    ) {
        self.id = id
        self.endpointId = endpointId
        self.projectId = projectId
        self.url = url
        self.secrets = secrets
        self.eventId = eventId
        self.deviceId = deviceId
        self.sequence = sequence
        self.payload = payload
        self.attempt = attempt
        self.skippedGap = skippedGap
        self.queuedAt = queuedAt
        self.fixAcceptedAt = fixAcceptedAt
    }
}

/// Opens claimed deliveries for sending, with this process's key. A delivery that cannot be
/// signed (its endpoint's secret sealed under another key) is not sent: it is recorded as a
/// retry after `unsignableRetryDelay`, until an operator starts the notifier with that key;
/// one whose event's body is not kept is failed (replayable), rather than failing every claim
/// that takes it.
public struct DeliveryOpener: Sendable {
    let sealer: SecretSealer
    let webhooks: WebhookStore
    let owner: String
    let logger: Logger

    static let unsignableRetryDelay: Duration = .seconds(300)

    /// - Parameter owner: the notifier whose leases the claimed deliveries are.
    public init(sealer: SecretSealer, webhooks: WebhookStore, owner: String, logger: Logger) {
        self.sealer = sealer
        self.webhooks = webhooks
        self.owner = owner
        self.logger = logger
    }

    /// The claimed deliveries that can be sent, opened; the others are recorded as not sent
    /// (their leases lapse and they are claimed again should that fail).
    public func open(_ claimed: [ClaimedDelivery]) async -> [DeliveryAttempt] {
        let (opened, unsendable) = Self.open(claimed, with: sealer)
        guard !unsendable.isEmpty else { return opened }
        logger.error(
            "deliveries not sent: their endpoint's secret cannot be opened with CHECKIN_SECRET_KEY, or their payload is not kept",
            metadata: ["deliveries": "\(unsendable.count)", "error": "\(unsendable[0].error ?? "")"])
        do {
            try await webhooks.record(unsendable, owner: owner)
        } catch {
            logger.error("could not record deliveries that were not sent", metadata: ["error": "\(error)"])
        }
        return opened
    }

    public static func open(_ claimed: [ClaimedDelivery], with sealer: SecretSealer)
        -> (opened: [DeliveryAttempt], unsendable: [DeliveryResult])
    {
        var opened: [DeliveryAttempt] = []
        var unsendable: [DeliveryResult] = []
        for delivery in claimed {
            func notSent(_ error: String, _ outcome: DeliveryResult.Outcome) -> DeliveryResult {
                DeliveryResult(
                    deliveryId: delivery.id, attempt: delivery.attempt, startedAt: Date(), latency: .zero, statusCode: nil,
                    error: "not sent: \(error)", outcome: outcome)
            }
            guard let payload = delivery.payload else {
                unsendable.append(notSent("its event's payload is not kept", .failed))
                continue
            }
            let secrets: [String]
            do {
                secrets = try delivery.sealedSecrets.map { sealed throws(SecretSealingError) in try sealer.open(sealed) }
            } catch {
                unsendable.append(notSent("\(error)", .retry(after: unsignableRetryDelay)))
                continue
            }
            opened.append(
                DeliveryAttempt(
                    id: delivery.id, endpointId: delivery.endpointId, projectId: delivery.projectId, url: delivery.url,
                    secrets: secrets, eventId: delivery.eventId, deviceId: delivery.deviceId, sequence: delivery.sequence,
                    payload: payload, attempt: delivery.attempt, skippedGap: delivery.skippedGap, queuedAt: delivery.queuedAt,
                    fixAcceptedAt: delivery.fixAcceptedAt))
        }
        return (opened, unsendable)
    }
}
