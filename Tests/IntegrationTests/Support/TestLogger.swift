import Logging

extension Logger {
    /// A test's logger, printing from `level` up: the warnings a test provokes on purpose (a
    /// partner that fails, a lease that runs out) stay out of its report unless asked for.
    static func forTests(_ label: String, level: Logger.Level = .warning) -> Logger {
        var logger = Logger(label: label)
        logger.logLevel = level
        return logger
    }
}
