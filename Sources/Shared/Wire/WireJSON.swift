import Foundation

/// The JSON coders every wire format uses, so that timestamps and key order are
/// the same wherever a message is written or read.
public enum WireJSON {
    /// Sorted keys make encoded events byte-identical for identical input,
    /// which keeps redelivered messages and webhook signatures reproducible.
    public static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(RFC3339.format(date))
        }
        return encoder
    }

    public static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            guard let date = RFC3339.parse(text) else {
                throw DecodingError.dataCorruptedError(
                    in: container, debugDescription: "'\(text)' is not an RFC 3339 timestamp")
            }
            return date
        }
        return decoder
    }
}
