/// How a delivery is named outside the service: `dlv_` and its number (`dlv_42`), so that an
/// id read in a log, a ticket or a URL says what it names, as `we_…` does for endpoints and
/// `key_…` for API keys. The number is the delivery's row, in the order deliveries were made.
public enum DeliveryIdentifier {
    public static let prefix = "dlv_"

    public static func text(_ id: Int64) -> String { prefix + String(id) }

    /// The number of `dlv_42`; with `bareNumber`, also of `42` (typed by a person at the
    /// command line). Nil for anything else.
    public static func number(_ text: some StringProtocol, bareNumber: Bool = false) -> Int64? {
        let text = Substring(text)
        let digits = text.hasPrefix(prefix) ? text.dropFirst(prefix.count) : (bareNumber ? text : "")
        guard !digits.isEmpty, digits.allSatisfy({ ("0"..."9").contains($0) }), let id = Int64(digits), id > 0 else { return nil }
        return id
    }
}

/// A delivery's number, written and read as its identifier (`"dlv_42"`).
@propertyWrapper
public struct DeliveryIdentifierCoded: Codable, Sendable, Equatable, Hashable {
    public var wrappedValue: Int64

    public init(wrappedValue: Int64) {
        self.wrappedValue = wrappedValue
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let id = DeliveryIdentifier.number(text) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "\(text) is not a delivery id (dlv_…)")
        }
        wrappedValue = id
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(DeliveryIdentifier.text(wrappedValue))
    }
}
