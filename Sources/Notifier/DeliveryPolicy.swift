import Foundation
import Persistence

/// What an endpoint answered to one attempt: a status and the headers that matter, or
/// the error that kept the request from being answered.
package struct WebhookResponse: Sendable, Equatable {
    package var statusCode: Int?
    package var retryAfter: String?
    package var location: String?
    package var error: String?

    package init(statusCode: Int? = nil, retryAfter: String? = nil, location: String? = nil, error: String? = nil) {
        self.statusCode = statusCode
        self.retryAfter = retryAfter
        self.location = location
        self.error = error
    }
}

/// Standard Webhooks' delivery rules: 2xx is success; 3xx is a failure (redirects are
/// never followed); 410 Gone disables the endpoint; 429 and 503 wait as `Retry-After`
/// says (capped by the maximum retry delay); every other failure backs off exponentially
/// with jitter; after the last attempt the delivery is failed.
struct DeliveryPolicy: Sendable {
    let configuration: NotifierConfiguration

    struct Decision: Equatable {
        var outcome: DeliveryResult.Outcome
        /// What went wrong, for the attempt log; nil on success.
        var error: String?
        var disablesEndpoint = false
    }

    func decide(_ response: WebhookResponse, attempt: Int, now: Date = Date(), random: Double = .random(in: 0..<1)) -> Decision {
        let status = response.statusCode
        if let status, (200..<300).contains(status) { return Decision(outcome: .delivered) }
        let error: String
        var requested: Duration?
        var disables = false
        switch status {
        case .some(let code) where (300..<400).contains(code):
            error = "HTTP \(code): redirect" + (response.location.map { " to \($0)" } ?? "") + " not followed"
        case 410:
            error = "HTTP 410: endpoint gone; disabled"
            disables = true
        case .some(let code) where code == 429 || code == 503:
            error = "HTTP \(code)" + (response.retryAfter.map { ", Retry-After \($0)" } ?? "")
            requested = response.retryAfter.flatMap { Self.retryAfter($0, now: now) }
        case .some(let code):
            error = "HTTP \(code)"
        case nil:
            error = response.error ?? "no answer"
        }
        guard attempt < configuration.maximumAttempts else {
            return Decision(outcome: .failed, error: error, disablesEndpoint: disables)
        }
        let delay = requested.map { min($0, configuration.maximumRetryDelay) } ?? backOff(afterAttempt: attempt, random: random)
        return Decision(outcome: .retry(after: delay), error: error, disablesEndpoint: disables)
    }

    /// Exponential back-off with "equal jitter": between half and all of the doubled delay,
    /// so that deliveries that failed together do not all come back together.
    func backOff(afterAttempt attempt: Int, random: Double) -> Duration {
        let delay = configuration.retryDelay(afterAttempt: attempt)
        return delay / 2 + delay * (0.5 * min(max(random, 0), 1))
    }

    /// A `Retry-After` value: seconds, or an HTTP date (RFC 9110), as a wait from `now`.
    static func retryAfter(_ value: String, now: Date) -> Duration? {
        let text = value.trimmingCharacters(in: .whitespaces)
        if let seconds = Int(text) { return seconds >= 0 ? .seconds(seconds) : nil }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        for format in ["EEE, dd MMM yyyy HH:mm:ss zzz", "EEEE, dd-MMM-yy HH:mm:ss zzz", "EEE MMM d HH:mm:ss yyyy"] {
            formatter.dateFormat = format
            if let date = formatter.date(from: text) {
                return .milliseconds(Int64(max(0, date.timeIntervalSince(now)) * 1000))
            }
        }
        return nil
    }
}
