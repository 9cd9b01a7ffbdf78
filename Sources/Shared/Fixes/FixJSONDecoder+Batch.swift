import Foundation

extension FixJSONDecoder {
    /// What the body of `POST /v1/fixes` holds, judged in the order the API answers:
    /// not JSON, not a batch, empty, too large, then the problems of its fixes.
    public enum Batch: Sendable, Equatable {
        case fixes([Fix])
        case notJSON
        /// Neither an array nor an object whose `fixes` member is one.
        case notABatch
        case empty
        case tooLarge(count: Int)
        /// Every problem of the batch: the members of the envelope it does not have, then those
        /// of every fix, fix by fix, each named `fixes[i].field`.
        case invalid([FieldProblem])
    }

    /// A batch of fixes: `{"fixes": [ … ]}` or a bare array. `projectId` may be left
    /// out of a fix (or be null): it is then `defaultProjectId`, the API key's project.
    /// When given it must be that project, or the fix is refused for that alone.
    /// Fixes past `maximumCount` are checked as JSON only.
    public static func decodeBatch<Bytes: Collection<UInt8>>(
        _ bytes: Bytes, defaultProjectId: String?, maximumCount: Int, receivedAt: Date, limits: InputLimits = InputLimits()
    ) -> Batch {
        let decoder = BatchDecoder(defaultProjectId: defaultProjectId, maximumCount: maximumCount, receivedAt: receivedAt, limits: limits)
        if let batch = bytes.withContiguousStorageIfAvailable({ decoder.decode($0) }) { return batch }
        return Array(bytes).withUnsafeBufferPointer { decoder.decode($0) }
    }
}

private struct BatchDecoder {
    var defaultProjectId: String?
    var maximumCount: Int
    var receivedAt: Date
    var limits: InputLimits

    /// The items of one `fixes` array as they were judged.
    struct Items {
        var count = 0
        var fixes: [Fix] = []
        var problems: [FieldProblem] = []
        var holdsUnrepresentableNumber = false
    }

    func decode(_ bytes: UnsafeBufferPointer<UInt8>) -> FixJSONDecoder.Batch {
        var unknown = UnknownMembers()
        let read = JSONDocument.read(bytes) { (scanner: inout JSONScanner) throws(JSONSyntaxError) -> Items? in
            scanner.allowsTrailingCommas = false
            var items: Items?
            var holdsUnrepresentable: Bool
            switch try scanner.valueKind() {
            case .array:
                items = try readItems(&scanner)
                holdsUnrepresentable = items?.holdsUnrepresentableNumber ?? false
            case .object:
                var unrepresentable = UnrepresentableMembers()
                if try scanner.enterObject() {
                    repeat {
                        let key = try scanner.readKey()
                        let holds: Bool
                        if !scanner.string(key, is: "fixes") {
                            if !limits.ignoresUnknownFixMembers { unknown.append(scanner.string(key)) }
                            holds = try scanner.skipValue()
                        } else if try scanner.valueKind() == .array {
                            // The last `fixes` member counts, as in a dictionary.
                            items = try readItems(&scanner)
                            holds = items?.holdsUnrepresentableNumber ?? false
                        } else {
                            holds = try scanner.skipValue()
                            items = nil
                        }
                        unrepresentable.record(key, holdsUnrepresentable: holds, in: scanner)
                    } while try scanner.nextMember()
                }
                holdsUnrepresentable = !unrepresentable.isEmpty
            default:
                throw JSONSyntaxError()
            }
            try scanner.expectEnd()
            guard !holdsUnrepresentable else { throw JSONSyntaxError() }
            return items
        }
        guard let read else { return .notJSON }
        guard let items = read else { return .notABatch }
        if items.count == 0 { return .empty }
        if items.count > maximumCount { return .tooLarge(count: items.count) }
        let problems = unknown.problems(field: { $0 }, notAMemberOf: "a batch") + items.problems
        return problems.isEmpty ? .fixes(items.fixes) : .invalid(problems)
    }

    private func readItems(_ scanner: inout JSONScanner) throws(JSONSyntaxError) -> Items {
        var items = Items()
        guard try scanner.enterArray() else { return items }
        repeat {
            defer { items.count += 1 }
            guard items.count < maximumCount else {
                if try scanner.skipValue() { items.holdsUnrepresentableNumber = true }
                continue
            }
            let context = FixContext(path: FieldPath(item: items.count), receivedAt: receivedAt, limits: limits)
            guard try scanner.valueKind() == .object else {
                if try scanner.skipValue() { items.holdsUnrepresentableNumber = true }
                items.problems.append(FieldProblem(field: context.path.object, problem: "must be a JSON object"))
                continue
            }
            var members = FixMembers()
            try members.read(&scanner, context)
            if members.holdsUnrepresentableNumber { items.holdsUnrepresentableNumber = true }
            var standIn: String?
            if let defaultProjectId {
                switch members.projectId {
                case .absent, .null:
                    standIn = defaultProjectId
                case .string(let token) where scanner.string(token, is: defaultProjectId):
                    break
                default:
                    // Refused for that alone, but for the members it should not have: every one is named.
                    items.problems.append(contentsOf: members.unknownMemberProblems(context.path))
                    items.problems.append(FieldProblem(field: context.path.field("projectId"), problem: "must be the API key's project"))
                    continue
                }
            }
            switch members.fix(scanner, context, projectId: standIn) {
            case .success(let fix): items.fixes.append(fix)
            case .failure(let invalid): items.problems.append(contentsOf: invalid.problems)
            }
        } while try scanner.nextElement()
        return items
    }
}
