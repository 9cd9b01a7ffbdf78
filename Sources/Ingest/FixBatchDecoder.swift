import Foundation
import ServiceSupport
import Shared

/// Turns the body of `POST /v1/fixes` into fixes, or into a problem that names every bad field.
///
/// The body is `{"fixes": [ … ]}` (or a bare array). `projectId` may be left out of
/// each fix: it is then the API key's project; when given it must be that project.
struct FixBatchDecoder {
    var maximumBatchSize: Int
    var limits: InputLimits

    /// `receivedAt`: when the request arrived, which bounds how far ahead fix timestamps may be.
    func decode(_ body: Data, projectId: String?, receivedAt: Date) throws -> [Fix] {
        guard let json = try? JSONSerialization.jsonObject(with: body, options: []) else {
            throw Problem.invalid("the body is not valid JSON")
        }
        let items: [Any]
        if let list = json as? [Any] {
            items = list
        } else if let object = json as? [String: Any], let list = object["fixes"] as? [Any] {
            items = list
        } else {
            throw Problem.invalid(
                "the body must be {\"fixes\": [ … ]}", parameters: [.init(name: "fixes", reason: "is required and must be an array")])
        }
        guard !items.isEmpty else {
            throw Problem.invalid("the batch is empty", parameters: [.init(name: "fixes", reason: "must hold at least one fix")])
        }
        guard items.count <= maximumBatchSize else {
            throw Problem(
                status: .contentTooLarge, type: "batch-too-large", title: "The batch is too large",
                detail: "a batch holds at most \(maximumBatchSize) fixes; this one has \(items.count)")
        }
        var fixes: [Fix] = []
        fixes.reserveCapacity(items.count)
        var problems: [Problem.InvalidParameter] = []
        for (index, item) in items.enumerated() {
            var item = item
            if let projectId, var object = item as? [String: Any] {
                if object["projectId"] == nil || object["projectId"] is NSNull {
                    object["projectId"] = projectId
                    item = object
                } else if (object["projectId"] as? String) != projectId {
                    problems.append(.init(name: "fixes[\(index)].projectId", reason: "must be the API key's project"))
                    continue
                }
            }
            switch FixValidator.validate(item, path: "fixes[\(index)]", receivedAt: receivedAt, limits: limits) {
            case .success(let fix): fixes.append(fix)
            case .failure(let invalid):
                problems.append(contentsOf: invalid.problems.map { .init(name: $0.field, reason: $0.problem) })
            }
        }
        guard problems.isEmpty else {
            throw Problem.invalid("\(problems.count) problem(s) in the batch; nothing was accepted", parameters: problems)
        }
        return fixes
    }
}
