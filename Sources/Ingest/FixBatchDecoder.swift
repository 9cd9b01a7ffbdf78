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
        let batch = FixJSONDecoder.decodeBatch(
            body, defaultProjectId: projectId, maximumCount: maximumBatchSize, receivedAt: receivedAt, limits: limits)
        switch batch {
        case .fixes(let fixes):
            return fixes
        case .notJSON:
            throw Problem.invalid("the body is not valid JSON")
        case .notABatch:
            throw Problem.invalid(
                "the body must be {\"fixes\": [ … ]}", parameters: [.init(name: "fixes", reason: "is required and must be an array")])
        case .empty:
            throw Problem.invalid("the batch is empty", parameters: [.init(name: "fixes", reason: "must hold at least one fix")])
        case .tooLarge(let count):
            throw Problem(
                status: .contentTooLarge, type: "batch-too-large", title: "The batch is too large",
                detail: "a batch holds at most \(maximumBatchSize) fixes; this one has \(count)")
        case .invalid(let found):
            let problems = found.map { Problem.InvalidParameter(name: $0.field, reason: $0.problem) }
            throw Problem.invalid("\(problems.count) problem(s) in the batch; nothing was accepted", parameters: problems)
        }
    }
}
