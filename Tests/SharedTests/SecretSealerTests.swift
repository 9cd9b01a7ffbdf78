import Foundation
import Shared
import Testing

@Suite struct SecretSealerTests {
    let sealer = SecretSealer(key: .generate())
    let secret = WebhookSecret.generate()

    @Test func sealsWithoutRevealingAndOpensWithTheSameKey() throws {
        let sealed = sealer.seal(secret)
        #expect(sealed.hasPrefix("sealed:v1:\(sealer.key.id):"))
        #expect(!sealed.contains(secret.dropFirst(6)))
        #expect(sealer.seal(secret) != sealed, "a fresh nonce each time")
        #expect(try sealer.open(sealed) == secret)
    }

    @Test func refusesAnotherKeyAndAlteredValues() throws {
        let sealed = sealer.seal(secret)
        let other = SecretSealer(key: .generate())
        #expect(throws: SecretSealingError.unknownKey(sealer.key.id)) { try other.open(sealed) }
        #expect(throws: SecretSealingError.authenticationFailed) { try sealer.open(try Self.altered(sealed)) }
        #expect(throws: SecretSealingError.malformedSealedValue) { try sealer.open("hunter2") }
    }

    /// What a sealer keeps of the values it opened changes nothing of what it answers.
    @Test func aValueOpenedBeforeOpensAgainAndNothingElseDoes() throws {
        let sealed = sealer.seal(secret)
        #expect(try sealer.open(sealed) == secret)
        #expect(try sealer.open(sealed) == secret)
        #expect(throws: SecretSealingError.authenticationFailed) { try sealer.open(try Self.altered(sealed)) }
        #expect(throws: SecretSealingError.unknownKey(sealer.key.id)) { try SecretSealer(key: .generate()).open(sealed) }
        let another = WebhookSecret.generate()
        #expect(try sealer.open(sealer.seal(another)) == another)
    }

    /// `sealed` with the last byte of its tag flipped.
    static func altered(_ sealed: String) throws -> String {
        let encoded = try #require(sealed.split(separator: ":").last)
        var bytes = try #require(Data(base64Encoded: String(encoded)))
        bytes[bytes.count - 1] ^= 1
        return sealed.split(separator: ":").dropLast().joined(separator: ":") + ":" + bytes.base64EncodedString()
    }

    @Test func passesSecretsStoredBeforeEncryptionThrough() throws {
        #expect(SecretSealer.isPlaintext(secret))
        #expect(try sealer.open(secret) == secret)
    }

    @Test func keyMustBeTheBase64Of32Bytes() throws {
        #expect(throws: SecretSealingError.malformedKey) { try SecretEncryptionKey(base64: Data(count: 16).base64EncodedString()) }
        #expect(throws: SecretSealingError.malformedKey) { try SecretEncryptionKey(base64: "not base64!") }
        let key = SecretEncryptionKey.generate()
        #expect(try SecretEncryptionKey(base64: key.base64) == key)
        #expect(try SecretEncryptionKey(base64: key.base64).id == key.id)
    }

    @Test func newSecretsAreWhsecWith24To64Bytes() throws {
        func secret(bytes: Int) -> String { "whsec_" + Data(repeating: 7, count: bytes).base64EncodedString() }
        for refused in [secret(bytes: 16), secret(bytes: 23), secret(bytes: 65), String(secret(bytes: 32).dropFirst(6)), "whsec_***"] {
            #expect(throws: WebhookSignatureError.malformedSecret, "\(refused)") { try WebhookSecret.validateNew(refused) }
        }
        for accepted in [secret(bytes: 24), secret(bytes: 32), secret(bytes: 64), WebhookSecret.generate()] {
            #expect(throws: Never.self) { try WebhookSecret.validateNew(accepted) }
        }
        // A 16-byte secret stored before the minimum still signs until it is rotated.
        #expect(throws: Never.self) { try WebhookSecret(secret(bytes: 16)) }
    }
}
