import Foundation

/// Reads settings from environment variables, with defaults for local runs and an
/// error that names the variable when a value cannot be used.
package struct EnvironmentReader: Sendable {
    package var values: [String: String]

    package init(_ values: [String: String] = ProcessInfo.processInfo.environment) {
        self.values = values
    }

    package func string(_ name: String, default defaultValue: String) -> String {
        guard let value = values[name], !value.isEmpty else { return defaultValue }
        return value
    }

    package func optionalString(_ name: String) -> String? {
        guard let value = values[name], !value.isEmpty else { return nil }
        return value
    }

    package func int(_ name: String, default defaultValue: Int, range: ClosedRange<Int> = Int.min...Int.max) throws -> Int {
        guard let text = optionalString(name) else { return defaultValue }
        guard let value = Int(text), range.contains(value) else {
            throw ConfigurationError(variable: name, value: text, expected: "an integer in \(range.lowerBound)...\(range.upperBound)")
        }
        return value
    }

    package func double(
        _ name: String, default defaultValue: Double,
        range: ClosedRange<Double> = -Double.greatestFiniteMagnitude...Double.greatestFiniteMagnitude
    ) throws -> Double {
        guard let text = optionalString(name) else { return defaultValue }
        guard let value = Double(text), value.isFinite, range.contains(value) else {
            throw ConfigurationError(variable: name, value: text, expected: "a number in \(range.lowerBound)...\(range.upperBound)")
        }
        return value
    }

    package func bool(_ name: String, default defaultValue: Bool) throws -> Bool {
        guard let text = optionalString(name)?.lowercased() else { return defaultValue }
        switch text {
        case "1", "true", "yes", "on": return true
        case "0", "false", "no", "off": return false
        default: throw ConfigurationError(variable: name, value: text, expected: "true or false")
        }
    }

    /// Seconds, written as a plain number (`30`, `0.5`), at least `minimum`: an interval or
    /// a time-out of 0 would make a loop spin or every attempt fail, so those set one.
    package func duration(_ name: String, default defaultValue: Duration, minimum: Duration = .zero) throws -> Duration {
        guard let text = optionalString(name) else { return defaultValue }
        let least = minimum / .seconds(1)
        guard let seconds = Double(text), seconds.isFinite, seconds >= least else {
            let expected = minimum == .zero ? "a number of seconds" : "a number of seconds, at least \(least)"
            throw ConfigurationError(variable: name, value: text, expected: expected)
        }
        return .milliseconds(Int64(seconds * 1000))
    }
}

package struct ConfigurationError: Error, CustomStringConvertible {
    package var variable: String
    package var value: String
    package var expected: String

    package init(variable: String, value: String, expected: String) {
        self.variable = variable
        self.value = value
        self.expected = expected
    }

    package var description: String { "\(variable)='\(value)' is not valid: expected \(expected)" }
}
