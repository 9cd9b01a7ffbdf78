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

    public static func describe(_ error: any Error) -> String {
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
