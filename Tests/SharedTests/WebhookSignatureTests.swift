import Foundation
import Shared
import Testing

@Suite struct WebhookSignatureTests {
    /// The example of the Standard Webhooks specification.
    let secret = try! WebhookSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
    let id = "msg_p5jXN8AQM9LWM0D4loKWxJek"
    let timestamp = 1_614_265_330
    let body = Array(#"{"test": 2432232314}"#.utf8)

    @Test func matchesTheSpecificationExample() {
        #expect(
            WebhookSignature.sign(id: id, timestamp: timestamp, body: body, secret: secret)
                == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
    }

    @Test func verifiesItsOwnSignature() throws {
        let header = WebhookSignature.header(id: id, timestamp: timestamp, body: body, secrets: [secret])
        try WebhookSignature.verify(
            id: id, timestamp: String(timestamp), signatureHeader: header, body: body, secret: secret,
            now: Date(timeIntervalSince1970: Double(timestamp) + 10))
    }

    @Test func acceptsAnyOfSeveralSignaturesDuringRotation() throws {
        let newSecret = try WebhookSecret(WebhookSecret.generate())
        let header = WebhookSignature.header(id: id, timestamp: timestamp, body: body, secrets: [secret, newSecret])
        #expect(header.split(separator: " ").count == 2)
        for candidate in [secret, newSecret] {
            try WebhookSignature.verify(
                id: id, timestamp: String(timestamp), signatureHeader: header, body: body, secret: candidate,
                now: Date(timeIntervalSince1970: Double(timestamp)))
        }
    }

    @Test func rejectsATamperedBodyAStaleTimestampAndAnotherSecret() throws {
        let header = WebhookSignature.header(id: id, timestamp: timestamp, body: body, secrets: [secret])
        let now = Date(timeIntervalSince1970: Double(timestamp))
        #expect(throws: WebhookSignatureError.noMatchingSignature) {
            try WebhookSignature.verify(
                id: id, timestamp: String(timestamp), signatureHeader: header, body: body + [0x20], secret: secret, now: now)
        }
        #expect(throws: WebhookSignatureError.timestampOutOfTolerance) {
            try WebhookSignature.verify(
                id: id, timestamp: String(timestamp), signatureHeader: header, body: body, secret: secret,
                now: now.addingTimeInterval(301))
        }
        let other = try WebhookSecret(WebhookSecret.generate())
        #expect(throws: WebhookSignatureError.noMatchingSignature) {
            try WebhookSignature.verify(
                id: id, timestamp: String(timestamp), signatureHeader: header, body: body, secret: other, now: now)
        }
        #expect(throws: WebhookSignatureError.missingHeader("webhook-signature")) {
            try WebhookSignature.verify(id: id, timestamp: String(timestamp), signatureHeader: nil, body: body, secret: secret, now: now)
        }
    }

    @Test func refusesMalformedSecrets() {
        #expect(throws: WebhookSignatureError.malformedSecret) { try WebhookSecret("whsec_not-base64!") }
        #expect(throws: WebhookSignatureError.malformedSecret) { try WebhookSecret("whsec_AAAA") }
    }
}
