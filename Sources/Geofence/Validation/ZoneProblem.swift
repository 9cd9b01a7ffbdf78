/// One thing wrong with a zones document, named by zone, fence (or beacon) and
/// problem, so that whoever wrote the document can fix exactly that.
public struct ZoneProblem: Sendable, Equatable, Codable, CustomStringConvertible {
    public var projectId: String?
    public var zoneId: String
    /// The fence concerned, when the problem is one of its own.
    public var fenceId: String?
    /// The beacon concerned, when the problem is one of its own.
    public var beaconId: String?
    public var problem: String

    public init(projectId: String? = nil, zoneId: String, fenceId: String? = nil, beaconId: String? = nil, problem: String) {
        self.projectId = projectId
        self.zoneId = zoneId
        self.fenceId = fenceId
        self.beaconId = beaconId
        self.problem = problem
    }

    public var description: String {
        var text = ""
        if let projectId { text += "project '\(projectId)' " }
        text += "zone '\(zoneId)'"
        if let fenceId { text += " fence '\(fenceId)'" }
        if let beaconId { text += " beacon '\(beaconId)'" }
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
