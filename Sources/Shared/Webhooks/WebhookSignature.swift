import Crypto
import Foundation

/// A webhook signing secret in the Standard Webhooks form `whsec_<base64 key>`.
public struct WebhookSecret: Sendable, Equatable, CustomStringConvertible {
    public static let prefix = "whsec_"
    /// Raw key bytes; `SymmetricKey` is made on use because it is not `Sendable`.
    let keyBytes: Data
    public var key: SymmetricKey { SymmetricKey(data: keyBytes) }

    /// Key sizes a new secret may have (Standard Webhooks: 24 to 64 bytes).
    public static let keySizes = 24...64
    /// Secrets stored before the 24-byte minimum still sign, until they are rotated.
    static let storedKeySizes = 16...64

    /// Reads a secret to sign or verify with: `whsec_` is optional, as partners' libraries have it.
    public init(_ text: String) throws {
        let encoded = text.hasPrefix(Self.prefix) ? String(text.dropFirst(Self.prefix.count)) : text
        guard let bytes = Data(base64Encoded: encoded), Self.storedKeySizes.contains(bytes.count) else {
            throw WebhookSignatureError.malformedSecret
        }
        keyBytes = bytes
    }

    /// Checks a secret a user gives for an endpoint: `whsec_` and the base64 of 24 to 64 bytes.
    @discardableResult
    public static func validateNew(_ text: String) throws -> WebhookSecret {
        guard text.hasPrefix(prefix), let bytes = Data(base64Encoded: String(text.dropFirst(prefix.count))),
            keySizes.contains(bytes.count)
        else {
            throw WebhookSignatureError.malformedSecret
        }
        return try WebhookSecret(text)
    }

    /// A fresh random secret (32 bytes) for a new endpoint or a rotation.
    public static func generate() -> String {
        let key = SymmetricKey(size: .bits256)
        return prefix + key.withUnsafeBytes { Data($0).base64EncodedString() }
    }

    /// Never prints the key.
    public var description: String { "whsec_…" }
}

public enum WebhookSignatureError: Error, Equatable, CustomStringConvertible {
    case malformedSecret
    case missingHeader(String)
    case timestampOutOfTolerance
    case noMatchingSignature

    public var description: String {
        switch self {
        case .malformedSecret: "a webhook secret is whsec_ followed by the base64 of 24 to 64 random bytes"
        case .missingHeader(let name): "the \(name) header is missing"
        case .timestampOutOfTolerance: "webhook-timestamp is too far from now"
        case .noMatchingSignature: "no webhook-signature matches the body"
        }
    }
}

/// Signing and verifying per the Standard Webhooks specification: the signature is
/// `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`; during key rotation the
/// header carries several, separated by spaces, and any one valid is enough.
public enum WebhookSignature {
    public static let idHeader = "webhook-id"
    public static let timestampHeader = "webhook-timestamp"
    public static let signatureHeader = "webhook-signature"

    public static func sign(id: String, timestamp: Int, body: some DataProtocol, secret: WebhookSecret) -> String {
        "v1," + Data(code(id: id, timestamp: timestamp, body: body, secret: secret)).base64EncodedString()
    }

    /// The HMAC of `id.timestamp.body`, fed in its parts: the body is not copied into one message.
    static func code(id: String, timestamp: Int, body: some DataProtocol, secret: WebhookSecret) -> HMAC<SHA256>.MAC {
        var mac = HMAC<SHA256>(key: secret.key)
        mac.update(data: Array("\(id).\(timestamp).".utf8))
        mac.update(data: body)
        return mac.finalize()
    }

    /// The `webhook-signature` header for all currently valid secrets.
    public static func header(id: String, timestamp: Int, body: some DataProtocol, secrets: [WebhookSecret]) -> String {
        secrets.map { sign(id: id, timestamp: timestamp, body: body, secret: $0) }.joined(separator: " ")
    }

    /// What a partner does on receipt: checks the timestamp is recent (against replay)
    /// and that one of the signatures was made with its secret.
    public static func verify(
        id: String?, timestamp: String?, signatureHeader: String?, body: some DataProtocol, secret: WebhookSecret,
        now: Date = Date(), tolerance: TimeInterval = 300
    ) throws {
        guard let id else { throw WebhookSignatureError.missingHeader(idHeader) }
        guard let timestamp, let seconds = Int(timestamp) else {
            throw WebhookSignatureError.missingHeader(timestampHeader)
        }
        guard let signatureHeader else { throw WebhookSignatureError.missingHeader(Self.signatureHeader) }
        guard abs(now.timeIntervalSince1970 - Double(seconds)) <= tolerance else {
            throw WebhookSignatureError.timestampOutOfTolerance
        }
        let expected = code(id: id, timestamp: seconds, body: body, secret: secret)
        for candidate in signatureHeader.split(separator: " ") {
            let parts = candidate.split(separator: ",", maxSplits: 1)
            guard parts.count == 2, parts[0] == "v1", let mac = Data(base64Encoded: String(parts[1])) else { continue }
            // A comparison in constant time (swift-crypto's `==` of a code and bytes).
            if expected == mac { return }
        }
        throw WebhookSignatureError.noMatchingSignature
    }
}
