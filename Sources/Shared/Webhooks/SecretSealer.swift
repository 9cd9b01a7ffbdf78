import Crypto
import Foundation

/// The key webhook secrets are encrypted with at rest: 32 random bytes, given as
/// base64 in `CHECKIN_SECRET_KEY` (`openssl rand -base64 32`).
public struct SecretEncryptionKey: Sendable, Equatable {
    public static let variable = "CHECKIN_SECRET_KEY"
    let bytes: Data
    /// Names the key in each sealed value without revealing it, so that a value
    /// sealed with another key is reported as such rather than as corrupt. Computed once, with
    /// the key: each value opened compares it.
    public let id: String

    public init(base64 text: String) throws(SecretSealingError) {
        guard let bytes = Data(base64Encoded: text.trimmingCharacters(in: .whitespacesAndNewlines)), bytes.count == 32 else {
            throw .malformedKey
        }
        self.bytes = bytes
        id = SHA256.hash(data: Data("checkin-secret-key".utf8) + bytes).prefix(4).map { String(format: "%02x", $0) }.joined()
    }

    public static func generate() -> SecretEncryptionKey {
        let key = SymmetricKey(size: .bits256)
        return try! SecretEncryptionKey(base64: key.withUnsafeBytes { Data($0).base64EncodedString() })
    }

    public var base64: String { bytes.base64EncodedString() }

    var symmetricKey: SymmetricKey { SymmetricKey(data: bytes) }
}

public enum SecretSealingError: Error, Equatable, CustomStringConvertible {
    case malformedKey
    case unknownKey(String)
    case malformedSealedValue
    case authenticationFailed

    public var description: String {
        switch self {
        case .malformedKey:
            "\(SecretEncryptionKey.variable) must be the base64 of 32 random bytes (openssl rand -base64 32)"
        case .unknownKey(let id):
            "a webhook secret is sealed with key \(id), which is not \(SecretEncryptionKey.variable); start with the key it was sealed with"
        case .malformedSealedValue: "a stored webhook secret is neither sealed nor a whsec_ secret"
        case .authenticationFailed: "a stored webhook secret does not decrypt: it was altered or sealed with another key"
        }
    }
}

/// Encrypts webhook secrets for storage with AES-256-GCM, and decrypts them for signing.
/// A sealed value reads `sealed:v1:<key id>:<base64 of nonce, ciphertext and tag>`;
/// a stored `whsec_` value is one written before secrets were encrypted, used as it is
/// until it is sealed at the next start.
public struct SecretSealer: Sendable {
    static let prefix = "sealed:v1:"
    public let key: SecretEncryptionKey
    /// Sealed values this sealer has opened, with what they opened to: the notifier opens
    /// its endpoints' few secrets for every delivery it signs.
    private let opened = KeptAnswers<String>()

    public init(key: SecretEncryptionKey) {
        self.key = key
    }

    public func seal(_ secret: String) -> String {
        // AES.GCM.seal only throws for nonce sizes other than the default.
        let box = try! AES.GCM.seal(Data(secret.utf8), using: key.symmetricKey)
        return Self.prefix + key.id + ":" + box.combined!.base64EncodedString()
    }

    public func open(_ stored: String) throws(SecretSealingError) -> String {
        if Self.isPlaintext(stored) { return stored }
        if let secret = opened.answer(to: stored) { return secret }
        guard stored.hasPrefix(Self.prefix) else { throw .malformedSealedValue }
        let parts = stored.dropFirst(Self.prefix.count).split(separator: ":", maxSplits: 1)
        guard parts.count == 2, let combined = Data(base64Encoded: String(parts[1])) else { throw .malformedSealedValue }
        guard parts[0] == key.id else { throw .unknownKey(String(parts[0])) }
        let secret: String
        do {
            let box = try AES.GCM.SealedBox(combined: combined)
            secret = String(decoding: try AES.GCM.open(box, using: key.symmetricKey), as: UTF8.self)
        } catch {
            throw .authenticationFailed
        }
        opened.keep(secret, for: stored)
        return secret
    }

    /// A secret stored before encryption at rest.
    public static func isPlaintext(_ stored: String) -> Bool { stored.hasPrefix(WebhookSecret.prefix) }
}
