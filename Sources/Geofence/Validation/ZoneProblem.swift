/// One thing wrong with a zones document, named by zone, fence (or beacon) and
/// problem, so that whoever wrote the document can fix exactly that.
public struct ZoneProblem: Sendable, Equatable, Codable, CustomStringConvertible {
    public var projectId: String?
    public var zoneId: String
    /// The fence or beacon concerned, when the problem is one of its own.
    public var fenceId: String?
    public var problem: String

    public init(projectId: String? = nil, zoneId: String, fenceId: String? = nil, problem: String) {
        self.projectId = projectId
        self.zoneId = zoneId
        self.fenceId = fenceId
        self.problem = problem
    }

    public var description: String {
        var text = ""
        if let projectId { text += "project '\(projectId)' " }
        text += "zone '\(zoneId)'"
        if let fenceId { text += " fence '\(fenceId)'" }
        return text + ": " + problem
    }
}

/// Why an engine could not be built: every problem of every zone, not just the first.
public struct ZoneValidationError: Error, Sendable, Equatable, CustomStringConvertible {
    public var problems: [ZoneProblem]

    public init(problems: [ZoneProblem]) {
        self.problems = problems
    }

    public var description: String {
        "invalid zones: " + problems.map(\.description).joined(separator: "; ")
    }
}
