import Foundation
import Persistence
import Shared

/// A delivery as `checkin deliveries show` prints it.
enum DeliveryText {
    static func describe(_ detail: DeliveryDetail) -> String {
        let delivery = detail.delivery
        var title = "delivery \(DeliveryIdentifier.text(delivery.id)): \(delivery.status.rawValue)"
        // A pending delivery's first line says what it waits for, what an operator asks first.
        if let waitingFor = detail.waitingFor { title += ", " + next(waitingFor, at: detail.nextAttemptAt) }
        var lines = [title]
        func field(_ name: String, _ value: String) { lines.append("  " + name.padding(toLength: 11, withPad: " ", startingAt: 0) + value) }
        field("event", "\(delivery.eventType) \(delivery.eventId)")
        field("device", "\(delivery.deviceId), sequence \(delivery.sequence.map(String.init) ?? "-")")
        field("endpoint", "\(delivery.endpointId) \(detail.endpointUrl)")
        field("queued", RFC3339.format(delivery.createdAt))
        if let deliveredAt = delivery.deliveredAt { field("delivered", RFC3339.format(deliveredAt)) }
        if delivery.status != .delivered, let error = delivery.lastError { field("last error", error) }
        field("payload", detail.payload ?? "(erased with the device)")
        lines.append("attempts:")
        lines += attemptLines(detail)
        return lines.joined(separator: "\n")
    }

    static func next(_ waitingFor: DeliveryWait, at time: Date?) -> String {
        switch waitingFor {
        case .nextAttempt: "next attempt at \(time.map(RFC3339.format) ?? "-")"
        case .attemptInFlight: "an attempt is being made now"
        case .earlierDelivery: "waiting for the device's earlier delivery to this endpoint"
        case .endpointEnabled: "endpoint disabled: waits until it is enabled (checkin webhooks enable)"
        }
    }

    /// One line per attempt, oldest first. A replayed delivery's are grouped in rounds, each
    /// headed by when it began: its attempts are numbered from 1 again after each replay.
    static func attemptLines(_ detail: DeliveryDetail) -> [String] {
        guard !detail.replays.isEmpty else {
            return detail.attemptLog.isEmpty ? ["  none yet"] : detail.attemptLog.map { "  " + line($0) }
        }
        var lines: [String] = []
        let began = [detail.delivery.createdAt] + detail.replays
        for (index, start) in began.enumerated() {
            let round = index + 1
            lines.append("  round \(round): \(round == 1 ? "queued" : "replayed") at \(RFC3339.format(start))")
            let attempts = detail.attemptLog.filter { $0.round == round }
            lines += attempts.isEmpty ? [round == began.count ? "    none yet" : "    none"] : attempts.map { "    " + line($0) }
        }
        return lines
    }

    static func line(_ attempt: DeliveryAttemptRecord) -> String {
        let outcome = attempt.error ?? attempt.statusCode.map { "HTTP \($0)" } ?? "no answer"
        return "attempt \(attempt.attempt)  \(RFC3339.format(attempt.startedAt))  "
            + milliseconds(attempt.latencyMilliseconds) + "  \(outcome)"
    }

    /// A latency to a tenth of a millisecond (as the API gives it), right-aligned.
    static func milliseconds(_ value: Double) -> String {
        let text = String(format: "%.1f ms", value)
        return String(repeating: " ", count: max(0, 10 - text.count)) + text
    }
}
