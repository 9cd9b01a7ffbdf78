import Foundation
import Hummingbird
import Persistence
import ServiceSupport
import Shared

extension ManagementRoutes {
    static let decisionPageLimits = 1...1000

    func addDeviceRoutes(to router: RouterGroup<IngestRequestContext>) {
        router.get("/v1/devices/:deviceId") { request, context in
            let projectId = try await keys.project(for: request, context: context, kind: .management)
            try Self.refuseUnknownParameters(of: request, known: [])
            let deviceId = try context.parameters.decoded("deviceId")
            guard Self.couldBeIdentifier(deviceId),
                let view = try await dependencies.insight.view(projectId: projectId, deviceId: deviceId)
            else {
                throw Problem.notFound("nothing is kept about device \(deviceId) in this project")
            }
            return try json(view)
        }
        router.delete("/v1/devices/:deviceId") { request, context in
            let projectId = try await keys.project(for: request, context: context, kind: .management)
            try Self.refuseUnknownParameters(of: request, known: [])
            let deviceId = try context.parameters.decoded("deviceId")
            // Answered the same whether or not anything was stored yet: its first fixes may
            // still be on their way, and they are erased too.
            guard Self.couldBeIdentifier(deviceId) else {
                throw Problem.invalid("bad device id", parameters: [.init(name: "deviceId", reason: "must be a device id")])
            }
            let eraser = DeviceEraser(
                database: dependencies.database, producer: dependencies.producer, fixesTopic: configuration.topics.fixes,
                logger: logger)
            return try json(try await eraser.erase(projectId: projectId, deviceId: deviceId, by: "management API", logger: logger))
        }
        router.get("/v1/devices/:deviceId/decisions") { request, context in
            let projectId = try await keys.project(for: request, context: context, kind: .management)
            let deviceId = try context.parameters.decoded("deviceId")
            try Self.refuseUnknownParameters(of: request, known: ["limit", "cursor"])
            let query = request.uri.queryParameters
            let limit = try Self.limit(query.get("limit"), default: 100, within: Self.decisionPageLimits)
            let cursor = try Self.cursor(query.get("cursor"))
            guard Self.couldBeIdentifier(deviceId) else {
                return try json(PageAnswer<DecisionRecord>([], nextCursor: nil))
            }
            let page = try await dependencies.insight.decisions(
                projectId: projectId, deviceId: deviceId, cursor: cursor, limit: limit)
            return try json(PageAnswer(page))
        }
    }

    func addEventRoutes(to router: RouterGroup<IngestRequestContext>) {
        router.get("/v1/events") { request, context in
            let projectId = try await keys.project(for: request, context: context, kind: .management)
            let query = request.uri.queryParameters
            try Self.refuseUnknownParameters(of: request, known: ["deviceId", "zoneId", "type", "from", "until", "limit", "cursor"])
            func time(_ name: String) throws -> Date? {
                try query.get(name).map { text in
                    guard let date = RFC3339.parse(text) else {
                        throw Problem.invalid("bad time", parameters: [.init(name: name, reason: "must be an RFC 3339 time")])
                    }
                    return date
                }
            }
            let type = try query.get("type").map { text in
                guard let type = EventType(rawValue: text) else {
                    throw Problem.invalid("unknown type", parameters: [.init(name: "type", reason: "must be checkin or checkout")])
                }
                return type
            }
            /// An id to filter by: empty or not an id is a 400, never a filter that answers everything.
            func identifier(_ name: String) throws -> String? {
                try query.get(name).map { text in
                    if let problem = InputLimits.identifierProblem(text) {
                        throw Problem.invalid("bad \(name)", parameters: [.init(name: name, reason: problem)])
                    }
                    return text
                }
            }
            let filter = EventFilter(
                deviceId: try identifier("deviceId"), zoneId: try identifier("zoneId"), type: type, from: try time("from"),
                until: try time("until"))
            let page = try await dependencies.insight.events(
                projectId: projectId, filter: filter, cursor: try Self.cursor(query.get("cursor")),
                limit: try Self.limit(query.get("limit"), default: 100, within: Self.decisionPageLimits))
            return try json(PageAnswer(page))
        }
    }

    /// Query parameters a route does not know are a 400 naming each (a misspelt filter would
    /// otherwise answer everything), and so is one given twice (which of two `dryRun` values
    /// counts must not be a guess).
    static func refuseUnknownParameters(of request: Request, known: Set<String>) throws {
        let names = request.uri.queryParameters.map { String($0.key) }
        let unknown = Set(names).subtracting(known)
        guard unknown.isEmpty else {
            throw Problem.invalid(
                "unknown query parameter", parameters: unknown.sorted().map { .init(name: $0, reason: "is not a parameter of this route") })
        }
        var seen: Set<String> = []
        let repeated = Set(names.filter { !seen.insert($0).inserted })
        guard repeated.isEmpty else {
            throw Problem.invalid(
                "query parameter given more than once",
                parameters: repeated.sorted().map { .init(name: $0, reason: "must be given once") })
        }
    }

    /// A `cursor` query parameter: absent is the first page; anything but a cursor this API gave is a 400.
    static func cursor(_ text: String?) throws -> Int64? {
        try text.map { text in
            guard let value = Int64(text), value > 0 else {
                throw Problem.invalid(
                    "unknown cursor", parameters: [.init(name: "cursor", reason: "must be a nextCursor this API returned")])
            }
            return value
        }
    }

    /// A `limit` query parameter: absent is `defaultValue`, anything but a whole number in `range` a 400.
    static func limit(_ text: String?, default defaultValue: Int, within range: ClosedRange<Int>) throws -> Int {
        guard let text else { return defaultValue }
        guard let value = Int(text), range.contains(value) else {
            throw Problem.invalid(
                "limit out of range",
                parameters: [.init(name: "limit", reason: "must be a whole number from \(range.lowerBound) to \(range.upperBound)")])
        }
        return value
    }
}
