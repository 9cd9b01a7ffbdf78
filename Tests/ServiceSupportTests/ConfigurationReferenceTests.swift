import Foundation
import ServiceSupport
import Shared
import Testing

/// One list of the settings (`ConfigurationVariables`), and docs/configuration.md, name every
/// variable the program reads and nothing it does not: each `"CHECKIN_…"` string of the
/// sources is in both, and each entry of both is read somewhere. Likewise docs/evaluation-rules.md
/// lists every decision reason code and no other.
@Suite struct ConfigurationReferenceTests {
    static let root = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The quoted `CHECKIN_…` strings of every Swift file under Sources/ but the list itself.
    static func variablesRead() throws -> Set<String> {
        let pattern = try Regex(#""(CHECKIN_[A-Z0-9_]+)""#)
        var found: Set<String> = []
        let files = FileManager.default.enumerator(at: root.appending(path: "Sources"), includingPropertiesForKeys: nil)
        while let file = files?.nextObject() as? URL {
            guard file.pathExtension == "swift", file.lastPathComponent != "ConfigurationVariables.swift" else { continue }
            let text = try String(contentsOf: file, encoding: .utf8)
            for match in text.matches(of: pattern) {
                if let name = match.output[1].substring { found.insert(String(name)) }
            }
        }
        return found
    }

    /// The variables in the first column of the reference's table.
    static func variablesDocumented() throws -> Set<String> {
        let text = try String(contentsOf: root.appending(path: "docs/configuration.md"), encoding: .utf8)
        let pattern = try Regex(#"CHECKIN_[A-Z0-9_]+"#)
        var found: Set<String> = []
        for line in text.split(separator: "\n") where line.hasPrefix("| `CHECKIN_") {
            let firstCell = line.dropFirst().prefix { $0 != "|" }
            for match in firstCell.matches(of: pattern) { found.insert(String(firstCell[match.range])) }
        }
        return found
    }

    @Test func everyVariableReadIsListedAndDocumentedAndEveryListedOneIsRead() throws {
        let read = try Self.variablesRead()
        let documented = try Self.variablesDocumented()
        let listed = ConfigurationVariables.settings.union(ConfigurationVariables.prefixes)
        #expect(read.count > 50, "the sources were not found: \(read.count) variables")
        #expect(read.subtracting(documented).sorted() == [], "read but not in docs/configuration.md")
        #expect(documented.subtracting(read).sorted() == [], "in docs/configuration.md but read nowhere")
        #expect(read.subtracting(listed).sorted() == [], "read but not in ConfigurationVariables")
        #expect(listed.subtracting(read).sorted() == [], "in ConfigurationVariables but read nowhere")
    }

    /// The reason codes in the first column of the table under "Reason codes".
    @Test func everyDecisionReasonIsDocumentedAndNoOther() throws {
        let text = try String(contentsOf: Self.root.appending(path: "docs/evaluation-rules.md"), encoding: .utf8)
        let section = text.components(separatedBy: "\n### ").first { $0.hasPrefix("Reason codes\n") } ?? ""
        var documented: Set<String> = []
        for line in section.split(separator: "\n") where line.hasPrefix("| `") {
            documented.insert(String(line.dropFirst(3).prefix { $0 != "`" }))
        }
        let reasons = Set(DecisionReason.allCases.map(\.rawValue))
        #expect(reasons.subtracting(documented).sorted() == [], "reason codes missing from docs/evaluation-rules.md")
        #expect(documented.subtracting(reasons).sorted() == [], "in docs/evaluation-rules.md but not a reason code")
    }

    @Test func aMisspeltSettingIsNamedWithTheSettingItWasMeantToBe() {
        let unknown = ConfigurationVariables.unknown(in: [
            "CHECKIN_WEBHOK_TIMEOUT": "3", "CHECKIN_WEBHOOK_TIMEOUT": "3", "CHECKIN_KAFKA_PROPERTY_linger_ms": "5",
            "CHECKIN_RUN_DIR": "/tmp", "CHECKIN_TEST_SEED": "1", "CHECKIN_NOTHING_LIKE_ANY_SETTING_AT_ALL": "1", "HOME": "/root",
        ])
        #expect(
            unknown == [
                .init(name: "CHECKIN_NOTHING_LIKE_ANY_SETTING_AT_ALL", suggestion: nil),
                .init(name: "CHECKIN_WEBHOK_TIMEOUT", suggestion: "CHECKIN_WEBHOOK_TIMEOUT"),
            ])
        #expect(unknown.last?.warning.contains("did you mean CHECKIN_WEBHOOK_TIMEOUT?") == true)
    }
}
