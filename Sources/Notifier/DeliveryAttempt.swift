import Foundation
import Logging
import Persistence
import Shared

/// A claimed delivery opened for sending: the claim as the store returned it, its endpoint's
/// secrets unsealed and its body at hand. The claim's fields (`id`, `url`, `attempt`, …) read
/// through it.
@dynamicMemberLookup
package struct DeliveryAttempt: Sendable {
    package var claimed: ClaimedDelivery
    package var secrets: [String]
    package var payload: String

    package init(claimed: ClaimedDelivery, secrets: [String], payload: String) {
        self.claimed = claimed
        self.secrets = secrets
        self.payload = payload
    }

    package init(
        id: Int64, endpointId: String, projectId: String, url: String, secrets: [String], eventId: String,
        deviceId: String, sequence: Int?, payload: String, attempt: Int, skippedGap: Bool = false, queuedAt: Date? = nil,
        fixAcceptedAt: Date? = nil
    ) {
        self.init(
            claimed: ClaimedDelivery(
                id: id, endpointId: endpointId, projectId: projectId, url: url, sealedSecrets: [], eventId: eventId,
                deviceId: deviceId, sequence: sequence, payload: payload, attempt: attempt, skippedGap: skippedGap,
                queuedAt: queuedAt, fixAcceptedAt: fixAcceptedAt),
            secrets: secrets, payload: payload)
    }

    package subscript<Value>(dynamicMember field: KeyPath<ClaimedDelivery, Value>) -> Value { claimed[keyPath: field] }
}

/// Opens claimed deliveries for sending, with this process's key. A delivery that cannot be
/// signed (its endpoint's secret sealed under another key) is not sent: it is recorded as a
/// retry after `unsignableRetryDelay`, until an operator starts the notifier with that key;
/// one whose event's body is not kept is failed (replayable), rather than failing every claim
/// that takes it.
package struct DeliveryOpener: Sendable {
    let sealer: SecretSealer
    let webhooks: WebhookStore
    let owner: String
    let logger: Logger

    static let unsignableRetryDelay: Duration = .seconds(300)

    /// - Parameter owner: the notifier whose leases the claimed deliveries are.
    package init(sealer: SecretSealer, webhooks: WebhookStore, owner: String, logger: Logger) {
        self.sealer = sealer
        self.webhooks = webhooks
        self.owner = owner
        self.logger = logger
    }

    /// The claimed deliveries that can be sent, opened; the others are recorded as not sent
    /// (their leases lapse and they are claimed again should that fail).
    package func open(_ claimed: [ClaimedDelivery]) async -> [DeliveryAttempt] {
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

    package static func open(_ claimed: [ClaimedDelivery], with sealer: SecretSealer)
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
            opened.append(DeliveryAttempt(claimed: delivery, secrets: secrets, payload: payload))
        }
        return (opened, unsendable)
    }
}
