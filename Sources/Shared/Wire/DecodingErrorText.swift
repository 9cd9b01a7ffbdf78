import Foundation

/// Short, field-naming descriptions of Codable errors for API answers, CLI messages and
/// dead-letter records.
public enum DecodingErrorText {
    /// The member a decoding error is about and what is wrong with it, for an `invalid-params`
    /// entry (`zones[0].minimumRetriggerTime`, "must be a number"); nil when it names none.
    public static func parameter(_ error: any Error) -> (name: String, reason: String)? {
        func kind(_ type: Any.Type) -> String {
            switch type {
            case is Double.Type, is Float.Type: "a number"
            case is Int.Type, is Int64.Type, is Int32.Type: "a whole number"
            case is String.Type: "a string"
            case is Bool.Type: "true or false"
            case is [Any].Type: "an array"
            default: String(describing: type).hasPrefix("Array") ? "an array" : "an object"
            }
        }
        switch error as? DecodingError {
        case .keyNotFound(let key, let context): return (path(context.codingPath + [key]), "is required")
        case .typeMismatch(let type, let context), .valueNotFound(let type, let context):
            guard !context.codingPath.isEmpty else { return nil }
            return (path(context.codingPath), "must be \(kind(type))")
        case .dataCorrupted(let context):
            guard !context.codingPath.isEmpty else { return nil }
            return (path(context.codingPath), context.debugDescription)
        default: return nil
        }
    }

    /// Every member an error is about, with what is wrong with each: one for a decoding
    /// error, each of a document's `DecodingFailures`.
    public static func parameters(_ error: any Error) -> [(name: String, reason: String)] {
        guard let failures = error as? DecodingFailures else { return parameter(error).map { [$0] } ?? [] }
        return failures.errors.compactMap { parameter($0) }
    }

    /// One line for each member an error is about (see `parameters`).
    public static func lines(_ error: any Error) -> [String] {
        guard let failures = error as? DecodingFailures else { return [describe(error)] }
        return failures.errors.map { describe($0) }
    }

    public static func describe(_ error: any Error) -> String {
        if let failures = error as? DecodingFailures {
            return "\(failures.errors.count) members could not be read: " + lines(failures).joined(separator: "; ")
        }
        switch error as? DecodingError {
        case .keyNotFound(let key, let context): return "\(path(context.codingPath + [key])) is required"
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            return "\(path(context.codingPath)) has the wrong type: \(context.debugDescription)"
        case .dataCorrupted(let context):
            return context.codingPath.isEmpty ? "not valid JSON" : "\(path(context.codingPath)): \(context.debugDescription)"
        default: return "\(error)"
        }
    }

    /// `zones[0].fences[1].radius`: keys joined by dots, indices in brackets.
    private static func path(_ codingPath: [any CodingKey]) -> String {
        codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
            .trimmingCharacters(in: CharacterSet(charactersIn: "."))
    }
}

/// Every element of a document's lists that could not be decoded (a zone, a fence), each
/// with its first problem: one answer names them all, where decoding stops at the first.
/// Always two or more (see `throwIfAny`): a single problem is thrown as itself.
public struct DecodingFailures: Error {
    public private(set) var errors: [DecodingError]

    private init(_ errors: [DecodingError]) {
        self.errors = errors
    }

    /// Throws what `errors` found, if anything: the decoding error itself when there is one.
    public static func throwIfAny(_ errors: [DecodingError]) throws {
        guard let first = errors.first else { return }
        throw errors.count == 1 ? first : DecodingFailures(errors) as any Error
    }
}

extension UnkeyedDecodingContainer {
    /// Decodes every element, adding the problems of those that cannot be decoded to
    /// `failures` and going on with the next one.
    public mutating func decodeEach<Element: Decodable>(_ type: Element.Type, failures: inout [DecodingError]) throws
        -> [Element]
    {
        var elements: [Element] = []
        while !isAtEnd {
            do {
                elements.append(try decode(type))
            } catch let nested as DecodingFailures {
                failures += nested.errors
                _ = try decode(SkippedElement.self)
            } catch let error as DecodingError {
                failures.append(error)
                _ = try decode(SkippedElement.self)
            }
        }
        return elements
    }
}

/// Any value, read past: a failed decode leaves an unkeyed container at its element.
private struct SkippedElement: Decodable {
    init(from decoder: any Decoder) throws {}
}
