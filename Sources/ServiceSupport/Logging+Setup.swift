import Foundation
import Logging

/// Process-wide logging: plain text for people, JSON lines for log pipelines
/// (`CHECKIN_LOG_FORMAT=json`), level from `CHECKIN_LOG_LEVEL`.
package enum LoggingSetup {
    /// Refuses a level or format it does not know, naming the variable: a misspelt
    /// `CHECKIN_LOG_FORMAT=jsno` must not leave a log pipeline reading text.
    package static func bootstrap(environment: EnvironmentReader = EnvironmentReader()) throws {
        let levelText = environment.string("CHECKIN_LOG_LEVEL", default: "info")
        guard let level = Logger.Level(rawValue: levelText.lowercased()) else {
            throw ConfigurationError(
                variable: "CHECKIN_LOG_LEVEL", value: levelText,
                expected: Logger.Level.allCases.map(\.rawValue).joined(separator: ", "))
        }
        let format = environment.string("CHECKIN_LOG_FORMAT", default: "text")
        guard format == "text" || format == "json" else {
            throw ConfigurationError(variable: "CHECKIN_LOG_FORMAT", value: format, expected: "text or json")
        }
        let json = format == "json"
        LoggingSystem.bootstrap { label in
            var handler: any LogHandler =
                json ? JSONLogHandler(label: label) : StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
    }
}

/// One JSON object per line on standard error.
package struct JSONLogHandler: LogHandler {
    package var metadata: Logger.Metadata = [:]
    package var logLevel: Logger.Level = .info
    let label: String

    package init(label: String) {
        self.label = label
    }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    package func log(event: LogEvent) {
        var object: [String: String] = [
            "time": ISO8601DateFormatter().string(from: Date()), "level": event.level.rawValue, "logger": label,
            "message": event.message.description,
        ]
        for (key, value) in metadata.merging(event.metadata ?? [:], uniquingKeysWith: { $1 }) {
            object[key] = value.description
        }
        guard var line = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else { return }
        line.append(0x0A)
        FileHandle.standardError.write(line)
    }
}
