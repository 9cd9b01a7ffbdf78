import Foundation
import Shared
import Testing

/// `FixJSONDecoder` against the decoders it replaces, on thousands of generated
/// documents: `FixValidator.validate(json:)` for one fix, and the batch decoding
/// Ingest did with `JSONSerialization` and `FixValidator` (`ReferenceBatchDecoder`).
/// A failure names its seed; `CHECKIN_TEST_SEED=<seed>` replays it.
@Suite struct FixJSONDecoderPropertyTests {
    static let receivedAt = FixJSONGenerator.receivedAt

    @Test func decodesEveryDocumentAsTheValidatorDoes() {
        let seed = SeededRandom.testSeed(fixed: 20_261_122)
        var generator = FixJSONGenerator(seed: seed)
        var outcomes = (accepted: 0, refused: 0, notJSON: 0)
        for index in 0..<3_000 {
            let document = generator.document()
            let limits = InputLimits(
                maxClockSkew: generator.random.oneIn(10) ? 0 : InputLimits.defaultMaxClockSkew,
                ignoresUnknownFixMembers: generator.random.oneIn(3))
            let expected = FixValidator.validate(json: Data(document), receivedAt: Self.receivedAt, limits: limits)
            let decoded = FixJSONDecoder.decode(document, receivedAt: Self.receivedAt, limits: limits)
            guard FixComparison.same(decoded, expected) else {
                Issue.record(
                    "seed \(seed), case \(index): \(FixComparison.describe(document))\nexpected \(expected)\ndecoded  \(decoded)")
                return
            }
            switch expected {
            case .success: outcomes.accepted += 1
            case .failure(let invalid) where invalid.problems.first?.problem == "is not valid JSON": outcomes.notJSON += 1
            case .failure: outcomes.refused += 1
            }
        }
        // The generator must keep reaching every outcome, or the comparison proves little.
        #expect(outcomes.accepted > 300 && outcomes.refused > 300 && outcomes.notJSON > 150, "\(outcomes)")
    }

    /// Numbers alone, many more of them than fixes bring: every one as `altitude`, the
    /// member that takes any finite number.
    @Test func readsEveryNumberAsJSONSerializationDoes() {
        let seed = SeededRandom.testSeed(fixed: 20_261_124)
        var generator = FixJSONGenerator(seed: seed)
        for index in 0..<4_000 {
            let number = generator.anyNumber()
            let document = Array(
                #"{"projectId":"p","deviceId":"d","timestamp":"2026-11-22T10:00:00Z","lat":0,"lon":0,"altitude":\#(number)}"#.utf8)
            let expected = FixValidator.validate(json: Data(document), receivedAt: Self.receivedAt)
            let decoded = FixJSONDecoder.decode(document, receivedAt: Self.receivedAt)
            guard FixComparison.same(decoded, expected) else {
                Issue.record("seed \(seed), case \(index): \(number)\nexpected \(expected)\ndecoded  \(decoded)")
                return
            }
        }
    }

    @Test func decodesEveryBatchAsIngestDid() {
        let seed = SeededRandom.testSeed(fixed: 20_261_123)
        var generator = FixJSONGenerator(seed: seed)
        var outcomes: [String: Int] = [:]
        for index in 0..<1_200 {
            let project = generator.apiKeyProject()
            let body = generator.batch(apiKeyProject: project)
            let maximum = generator.random.int(2...6)
            let limits = InputLimits(ignoresUnknownFixMembers: generator.random.oneIn(3))
            let expected = ReferenceBatchDecoder.decode(
                body, projectId: project, maximumCount: maximum, receivedAt: Self.receivedAt, limits: limits)
            let decoded = FixJSONDecoder.decodeBatch(
                body, defaultProjectId: project, maximumCount: maximum, receivedAt: Self.receivedAt, limits: limits)
            let same: Bool
            if case .fixes(let a) = decoded, case .fixes(let b) = expected {
                same = FixComparison.same(a, b)
            } else {
                same = decoded == expected
            }
            guard same else {
                Issue.record(
                    """
                    seed \(seed), case \(index), project \(String(describing: project)), maximum \(maximum), \
                    ignoring unknown members \(limits.ignoresUnknownFixMembers): \
                    \(FixComparison.describe(body))
                    expected \(expected)
                    decoded  \(decoded)
                    """)
                return
            }
            outcomes["\(expected)".prefix(while: { $0 != "(" }).description, default: 0] += 1
        }
        for outcome in ["fixes", "invalid", "notJSON", "notABatch", "empty", "tooLarge"] {
            #expect(outcomes[outcome, default: 0] > 10, "\(outcomes)")
        }
    }
}

/// How Ingest decoded a batch before `FixJSONDecoder.decodeBatch`: `JSONSerialization`
/// (less trailing commas), then `FixValidator` on each item with its path.
enum ReferenceBatchDecoder {
    static func decode(
        _ body: [UInt8], projectId: String?, maximumCount: Int, receivedAt: Date, limits: InputLimits = InputLimits()
    ) -> FixJSONDecoder.Batch {
        let data = Data(body)
        guard let json = try? JSONSerialization.jsonObject(with: data, options: []), !FixValidator.hasTrailingComma(data) else {
            return .notJSON
        }
        let refusesUnknownMembers = !limits.ignoresUnknownFixMembers
        let items: [Any]
        var problems: [FieldProblem] = []
        if let list = json as? [Any] {
            items = list
        } else if let object = json as? [String: Any], let list = object["fixes"] as? [Any] {
            items = list
            if refusesUnknownMembers {
                problems = object.keys.filter { $0 != "fixes" }.sorted().map {
                    FieldProblem(field: $0, problem: "is not a member of a batch")
                }
            }
        } else {
            return .notABatch
        }
        guard !items.isEmpty else { return .empty }
        guard items.count <= maximumCount else { return .tooLarge(count: items.count) }
        var fixes: [Fix] = []
        for (index, item) in items.enumerated() {
            var item = item
            if let projectId, var object = item as? [String: Any] {
                if object["projectId"] == nil || object["projectId"] is NSNull {
                    object["projectId"] = projectId
                    item = object
                } else if (object["projectId"] as? String) != projectId {
                    if refusesUnknownMembers {
                        problems.append(contentsOf: FixValidator.unknownMemberProblems(of: object, path: "fixes[\(index)]"))
                    }
                    problems.append(FieldProblem(field: "fixes[\(index)].projectId", problem: "must be the API key's project"))
                    continue
                }
            }
            switch FixValidator.validate(item, path: "fixes[\(index)]", receivedAt: receivedAt, limits: limits) {
            case .success(let fix): fixes.append(fix)
            case .failure(let invalid): problems.append(contentsOf: invalid.problems)
            }
        }
        return problems.isEmpty ? .fixes(fixes) : .invalid(problems)
    }
}
