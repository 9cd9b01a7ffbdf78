import Foundation
import Hummingbird
import Persistence
import ServiceSupport
import Shared

/// A page of decision records as the API answers it: newest first, with the cursor of the next (older) page.
struct DecisionPageAnswer: Encodable {
    var decisions: [DecisionRecord]
    var nextCursor: String?
}

extension ManagementRoutes {
    static let decisionPageLimits = 1...1000

    func addDeviceRoutes(to router: Router<IngestRequestContext>) {
        router.get("/v1/devices/:deviceId") { request, context in
            let projectId = try await keys.project(for: request, context: context, kind: .management)
            let deviceId = try context.parameters.require("deviceId")
            guard let view = try await dependencies.insight.view(projectId: projectId, deviceId: deviceId) else {
                throw Problem.notFound("nothing is kept about device \(deviceId) in this project")
            }
            return try json(view)
        }
        router.get("/v1/devices/:deviceId/decisions") { request, context in
            let projectId = try await keys.project(for: request, context: context, kind: .management)
            let deviceId = try context.parameters.require("deviceId")
            let query = request.uri.queryParameters
            let limit = try Self.limit(query.get("limit"), default: 100, within: Self.decisionPageLimits)
            let cursor = try query.get("cursor").map { text in
                guard let value = Int64(text), value > 0 else {
                    throw Problem.invalid(
                        "unknown cursor", parameters: [.init(name: "cursor", reason: "must be a nextCursor this API returned")])
                }
                return value
            }
            let page = try await dependencies.insight.decisions(
                projectId: projectId, deviceId: deviceId, cursor: cursor, limit: limit)
            return try json(DecisionPageAnswer(decisions: page.records, nextCursor: page.nextCursor.map(String.init)))
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
