import Foundation
import Persistence
import Shared
import Testing

@testable import Notifier

/// What the notifier does with what it claims: opens the endpoint's secrets with the
/// deployment's key; a delivery it cannot sign waits for the right key, one without a body fails.
@Suite struct DeliveryOpenerTests {
    let sealer = SecretSealer(key: .generate())

    func claimed(_ id: Int64, secrets: [String], payload: String?) -> ClaimedDelivery {
        ClaimedDelivery(
            id: id, endpointId: "we_1", projectId: "p", url: "https://hooks.example.com/", sealedSecrets: secrets,
            eventId: "e\(id)", deviceId: "d", sequence: Int(id), payload: payload, attempt: 1)
    }

    @Test func opensWhatItCanSignAndRecordsTheRestAsNotSent() {
        let secret = WebhookSecret.generate()
        let otherKey = SecretSealer(key: .generate())
        let (opened, unsendable) = DeliveryOpener.open(
            [
                claimed(1, secrets: [sealer.seal(secret)], payload: #"{"n":1}"#),
                claimed(2, secrets: [otherKey.seal(secret)], payload: #"{"n":2}"#),
                claimed(3, secrets: [sealer.seal(secret)], payload: nil),
            ], with: sealer)
        #expect(opened.map(\.id) == [1])
        #expect(opened.first?.secrets == [secret])
        #expect(opened.first?.payload == #"{"n":1}"#)
        #expect(opened.first?.sequence == 1)
        #expect(unsendable.map(\.deliveryId) == [2, 3])
        #expect(unsendable.first?.outcome == .retry(after: DeliveryOpener.unsignableRetryDelay))
        #expect(unsendable.last?.outcome == .failed)
        #expect(unsendable.allSatisfy { $0.error?.hasPrefix("not sent: ") == true && $0.attempt == 1 })
    }
}
