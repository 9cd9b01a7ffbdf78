import Foundation
import Persistence
import Testing

@testable import Notifier

/// Standard Webhooks' delivery rules, answer by answer.
@Suite struct DeliveryPolicyTests {
    let policy = DeliveryPolicy(
        configuration: NotifierConfiguration(
            initialRetryDelay: .seconds(5), maximumRetryDelay: .seconds(600), maximumAttempts: 5))

    @Test func twoHundredsAreDeliveredAndRedirectsAreFailures() {
        #expect(policy.decide(WebhookResponse(statusCode: 204), attempt: 1).outcome == .delivered)
        let redirect = policy.decide(WebhookResponse(statusCode: 301, location: "https://elsewhere"), attempt: 1, random: 1)
        #expect(redirect.outcome == .retry(after: .seconds(5)))
        #expect(redirect.error == "HTTP 301: redirect to https://elsewhere not followed")
    }

    @Test func goneDisablesTheEndpointAndStillCountsTheAttempt() {
        let gone = policy.decide(WebhookResponse(statusCode: 410), attempt: 2, random: 1)
        #expect(gone.disablesEndpoint)
        #expect(gone.outcome == .retry(after: .seconds(10)))
        #expect(policy.decide(WebhookResponse(statusCode: 410), attempt: 5).outcome == .failed)
    }

    @Test func retryAfterInSecondsOrAsADateIsHonouredAndCapped() throws {
        let now = Date(timeIntervalSince1970: 1_780_308_000)
        #expect(
            policy.decide(WebhookResponse(statusCode: 429, retryAfter: "120"), attempt: 1, now: now).outcome
                == .retry(after: .seconds(120)))
        // 2026-06-01T10:00:30Z, 30 s after `now`.
        #expect(
            policy.decide(WebhookResponse(statusCode: 503, retryAfter: "Mon, 01 Jun 2026 10:00:30 GMT"), attempt: 1, now: now)
                .outcome == .retry(after: .seconds(30)))
        #expect(
            policy.decide(WebhookResponse(statusCode: 429, retryAfter: "86400"), attempt: 1, now: now).outcome
                == .retry(after: .seconds(600)))
        // Unreadable: the ordinary back-off.
        #expect(
            policy.decide(WebhookResponse(statusCode: 503, retryAfter: "soon"), attempt: 1, now: now, random: 1).outcome
                == .retry(after: .seconds(5)))
        // Only 429 and 503 are asked to wait so.
        #expect(
            policy.decide(WebhookResponse(statusCode: 500, retryAfter: "120"), attempt: 1, now: now, random: 1).outcome
                == .retry(after: .seconds(5)))
    }

    @Test func backOffDoublesWithJitterUpToTheMaximumThenFails() {
        #expect(policy.backOff(afterAttempt: 1, random: 0) == .milliseconds(2500))
        #expect(policy.backOff(afterAttempt: 1, random: 1) == .seconds(5))
        #expect(policy.backOff(afterAttempt: 3, random: 1) == .seconds(20))
        #expect(policy.backOff(afterAttempt: 20, random: 1) == .seconds(600))
        let noAnswer = policy.decide(WebhookResponse(error: "connection refused"), attempt: 5)
        #expect(noAnswer.outcome == .failed)
        #expect(noAnswer.error == "connection refused")
    }
}
