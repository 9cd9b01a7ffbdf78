import Foundation

/// How much of the zone engine one project may take: every evaluator builds every
/// project's zones, so one tenant's document must not exhaust them for everyone, nor
/// keep them rebuilding. Checked wherever a project's zones are replaced (the API and
/// `checkin zones import`), before anything is stored.
public struct ZoneQuota: Sendable, Equatable {
    public static let defaultMaximumZones = 100_000
    public static let defaultMaximumFences = 1_000_000
    public static let defaultMaximumPositions = 10_000_000
    public static let defaultMinimumReplaceInterval: Duration = .seconds(5)

    /// Zones of one project.
    public var maximumZones: Int
    /// Fences of one project, over all its zones.
    public var maximumFences: Int
    /// Positions of one project's fences together (a circle counts one).
    public var maximumPositions: Int
    /// The least time between two replacements of one project's zones through the API.
    public var minimumReplaceInterval: Duration

    public init(
        maximumZones: Int = defaultMaximumZones, maximumFences: Int = defaultMaximumFences,
        maximumPositions: Int = defaultMaximumPositions, minimumReplaceInterval: Duration = .zero
    ) {
        self.maximumZones = maximumZones
        self.maximumFences = maximumFences
        self.maximumPositions = maximumPositions
        self.minimumReplaceInterval = minimumReplaceInterval
    }

    /// What the document has beyond the quota, one line per quota exceeded; empty when it fits.
    public func excess(of document: ZonesDocument) -> [String] {
        var fences = 0
        var positions = 0
        for zone in document.zones {
            fences += zone.fences.count
            for fence in zone.fences { positions += fence.geometry.positionCount }
        }
        var problems: [String] = []
        if document.zones.count > maximumZones {
            problems.append("\(document.zones.count) zones, at most \(maximumZones) are allowed per project")
        }
        if fences > maximumFences { problems.append("\(fences) fences, at most \(maximumFences) are allowed per project") }
        if positions > maximumPositions {
            problems.append("\(positions) positions, at most \(maximumPositions) are allowed per project")
        }
        return problems
    }
}

extension GeoJSONGeometry {
    /// Positions the geometry is made of: one for a point, every ring's for a polygon.
    public var positionCount: Int {
        switch self {
        case .point: 1
        case .lineString(let line): line.count
        case .polygon(let rings): rings.reduce(0) { $0 + $1.count }
        case .multiPolygon(let parts): parts.reduce(0) { $0 + $1.reduce(0) { $0 + $1.count } }
        }
    }
}
